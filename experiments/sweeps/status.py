"""What the terminal shows of the run store and of sweeps: ``xlstm-suite list`` (every artifact and, per scale,
how many of its planned runs are done, failed or missing), and a sweep's dry-run plan, progress bar and summary."""

import argparse
import re
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

from rich import box
from rich.console import Console, Group
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from experiments.config.artifacts import (
    SCALES,
    Artifact,
    PlannedRun,
    artifact_files,
    check_scale,
    known_artifacts,
    load_artifact,
    override_value,
)
from experiments.config.run_schema import INITIAL
from experiments.config.titles import title_of
from experiments.paths import REPORTS, checked_folder
from experiments.sweeps.claims import DEFAULT_STALE_AFTER_SECONDS
from experiments.sweeps.compute_estimate import Accelerator, RunCompute, estimate_text, run_compute
from experiments.sweeps.per_run_results import read_per_run_results
from experiments.sweeps.run_outcome import RunOutcome
from experiments.sweeps.run_store import (
    DIVERGED_METRIC,
    RUN_STORE,
    finished_result,
    run_directory,
    run_status,
    runs_frame,
    store_frame,
)
from experiments.sweeps.run_subset import parse_where, same_value
from experiments.sweeps.training_runs import training_sweep_command

COLUMNS = ["runs", "done", "committed", "diverged", "failed", "running", "damaged", "missing", "n/a", "other"]
ALWAYS_SHOWN = ("runs", "done", "missing")  # the others appear when a row has one
COLUMN_NOTES = {
    "committed": "done runs whose results a committed .runs.csv beside a report holds (the run store lacks them; "
    "report regenerates from them, a sweep would train them)",
    "diverged": "done runs whose training loss turned non-finite (their metrics are NaN, as the paper prints)",
    "failed": "runs whose last attempt failed (error.json)",
    "running": "runs another worker holds",
    "damaged": "a file of the run was moved aside as damaged (listed below), the next sweep reruns it",
    "missing": "planned runs not done (failed, running, damaged and n/a ones included)",
    "n/a": "not available, the model is not in the registry yet",
    "other": "runs of other configs in the store or in committed results (older configs, or sweeps with extra "
    "overrides, e.g. the committed mini language-model reports' task=offline_docs)",
}
REPORT_SUFFIX = ".md"  # a report's page (experiments.reports.report)
RUNS_SUFFIX = ".runs.csv"  # per-run results committed beside a report (experiments.reports.committed_runs)


# --- the list command ---------------------------------------------------------------------------------------------


def list_artifacts(
    root: Path = RUN_STORE,
    artifacts: Sequence[str] | None = None,
    scales: Sequence[str] = SCALES,
    stale_after_seconds: float = DEFAULT_STALE_AFTER_SECONDS,
    where: Mapping[str, list[str]] | None = None,
    reports: Path = REPORTS,
) -> Group:
    """A table with one row per artifact and scale it declares (missing counts every planned run not done; done
    counts the runs of committed per-run results too), then a line per damaged run naming its files. ``where``
    keeps the runs whose cells match it (experiments.sweeps.run_subset) and the rows that have such runs."""
    root = checked_folder(root, "--root")
    for scale in scales:
        check_scale(scale)
    rows, damaged = [], []
    loaded, bad_files = load_artifacts(artifacts or known_artifacts())
    for name, artifact in loaded.items():
        if artifact is None:
            rows.append((name, "bad", None))  # its file is named below the table
            continue
        for scale in [scale for scale in scales if scale in artifact.scales]:
            planned = artifact.runs(scale)
            runs = runs_matching(planned, where) if where else planned
            if not runs:
                continue
            counts, damage = status_counts(
                artifact.name, scale, runs, root, stale_after_seconds, reports, {run.run_id for run in planned}
            )
            rows.append((name, scale, counts))
            damaged += damage
    if where and not any(counts for _, _, counts in rows):
        pairs = " ".join(f"{key}={value}" for key, values in where.items() for value in values)
        raise ValueError(f"no planned run of {list(loaded)} matches --where {pairs}")
    lines = [
        reports_line(rows, scales, len(loaded)),
        *damaged,
        *(f"bad artifact file: {problem}" for problem in bad_files),
    ]
    return Group(list_table(root, rows), *(Text(line, overflow="fold") for line in lines))


def reports_line(rows: list[tuple[str, str, dict[str, int] | None]], scales: Sequence[str], artifacts: int) -> str:
    """Per scale, how many of the listed artifacts have a report page in the report folder (their own or an
    ablation's, e.g. the mini language-model reports' task=offline_docs), naming those without one where they are
    fewer than half: "report pages at smoke: 2 of 20 artifacts; at mini: ..." (no scale's name stands alone, as
    in a row of the table)."""
    parts = []
    for scale in scales:
        reported = {name for name, row_scale, counts in rows if row_scale == scale and counts and counts["reports"]}
        missing = [name for name in dict.fromkeys(name for name, _, _ in rows) if name not in reported]
        named = f" (none yet: {', '.join(missing)})" if missing and len(missing) < artifacts / 2 else ""
        parts.append(f"at {scale}: {len(reported)} of {artifacts} artifacts{named}")
    return "report pages " + "; ".join(parts)


def list_table(root: Path, rows: list[tuple[str, str, dict[str, int] | None]]) -> Table:
    """The rows, each artifact's name on its first row only, no name wrapped, the columns that hold a count."""
    shown = [
        column
        for column in COLUMNS
        if column in ALWAYS_SHOWN or any(counts and counts[column] for _, _, counts in rows)
    ]
    table = Table(
        title=f"Run store {root}", box=box.SIMPLE_HEAD, padding=0, show_edge=False
    )  # one space between columns
    table.add_column("artifact", no_wrap=True)
    table.add_column("scale", no_wrap=True)
    for column in shown:
        table.add_column(column, justify="right", no_wrap=True)
    previous = None
    for name, scale, counts in rows:
        cells = ("-" for _ in shown) if counts is None else (str(counts[column]) for column in shown)
        table.add_row(name if name != previous else "", scale, *cells)
        previous = name
    return table


def column_notes(table: Table) -> str:
    """What the table's columns count, for the columns it shows."""
    headers = [column.header for column in table.columns]
    return "; ".join(f"{column}: {note}" for column, note in COLUMN_NOTES.items() if column in headers)


def runs_matching(runs: list[PlannedRun], where: Mapping[str, list[str]]) -> list[PlannedRun]:
    """The runs whose cells have every key of ``where`` at one of its values (an artifact without the key: none)."""
    return [
        run
        for run in runs
        if all(
            key in run.cell and any(same_value(run.cell[key], value) for value in values)
            for key, values in where.items()
        )
    ]


def own_report_files(reports: Path, scale: str, artifact: str, suffix: str) -> list[Path]:
    """The artifact's files at ``scale`` ending in ``suffix``: its own report's and its ablations'
    (``<artifact>-<8 hex digits of the overrides>``), not another artifact's whose name starts the same."""
    own = re.compile(rf"{re.escape(artifact)}(-[0-9a-f]{{8}})?{re.escape(suffix)}")
    paths = sorted((reports / scale).glob(f"{artifact}*{suffix}"))
    return [path for path in paths if own.fullmatch(path.name) and path.is_file()]


def committed_done_ids(reports: Path, scale: str, artifact: str) -> set[str]:
    """The run ids that the committed per-run results of the artifact's reports at ``scale`` hold as done."""
    done: set[str] = set()
    for path in own_report_files(reports, scale, artifact, RUNS_SUFFIX):
        rows = read_per_run_results(path)
        done.update(rows.loc[rows["status"] == "done", "run_id"])
    return done


def committed_results_note(
    artifact: str,
    scale: str,
    runs: list[PlannedRun],
    root: Path,
    overrides: Sequence[str] = (),
    reports: Path = REPORTS,
) -> str | None:
    """A line naming the runs that the store has not finished but whose results a committed ``.runs.csv`` holds (a
    fresh clone's whole grid), the command that makes the report from them, and that a sweep trains them again;
    None when there are none."""
    committed_ids = committed_done_ids(reports, scale, artifact)
    held = [run for run in runs if run.run_id in committed_ids and finished_result(run_directory(run, root)) is None]
    if not held:
        return None
    files = ", ".join(shown_path(path) for path in own_report_files(reports, scale, artifact, RUNS_SUFFIX))
    command = " ".join(["xlstm-suite report", artifact, "--scale", scale, *overrides])
    return (
        f"{len(held)} of these runs are not in the run store, but committed results hold them ({files}): "
        f"`{command}` makes the report from them without training; a sweep trains them again"
    )


def shown_path(path: Path) -> str:
    """The path relative to the working directory where it lies below it (as a user types it), else whole."""
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)


def load_artifacts(names: Sequence[str]) -> tuple[dict[str, Artifact | None], list[str]]:
    """Each artifact by name (None for one whose file is bad), and a line per bad file naming it and its problem; an
    unknown name raises ValueError (one line, the valid names), before any file is read."""
    for name in names:
        if name not in artifact_files():
            load_artifact(name)  # raises, naming the valid choices
    loaded, bad_files = {}, []
    for name in names:
        try:
            loaded[name] = load_artifact(name)
        except ValueError as error:
            loaded[name] = None
            bad_files.append(str(error))
    return loaded, bad_files


def status_counts(
    artifact: str,
    scale: str,
    runs: list[PlannedRun],
    root: Path,
    stale_after_seconds: float,
    reports: Path,
    planned_ids: set[str],
) -> tuple[dict[str, int], list[str]]:
    """The counts of one row of ``list`` (``runs``: the row's; ``planned_ids``: every planned run's, whatever the
    row's ``--where``: "other" counts the runs of other configs), and what is damaged in its runs."""
    planned = runs_frame(runs, root, stale_after_seconds)
    statuses = Counter(planned["status"])
    stored_ids = set(store_frame(root, scale, artifact, stale_after_seconds)["run_id"])
    committed_ids = committed_done_ids(reports, scale, artifact)
    committed = planned["run_id"].isin(committed_ids) & (planned["status"] != "done")
    done = statuses["done"] + int(committed.sum())
    counts = {
        "reports": len(own_report_files(reports, scale, artifact, REPORT_SUFFIX)),
        "runs": len(runs),
        "done": done,
        "committed": int(committed.sum()),
        "diverged": int((planned.get(DIVERGED_METRIC) == 1).sum()) if DIVERGED_METRIC in planned else 0,
        "failed": statuses["failed"],
        "running": statuses["running"],
        "damaged": statuses["damaged"],
        "missing": len(runs) - done,
        "n/a": statuses["unavailable"],
        "other": len((stored_ids | committed_ids) - planned_ids),
    }
    return counts, list(planned.loc[planned["status"] == "damaged", "error"])


# --- a sweep: its plan (dry run), progress and summary ---------------------------------------------------------


def print_plan(
    console: Console,
    artifact: Artifact,
    scale: str,
    runs: list[PlannedRun],
    root: Path,
    stale_after_seconds: float,
    verbose: bool = False,
    accelerator: Accelerator = Accelerator(),
    overrides: Sequence[str] = (),
) -> None:
    """The dry run: one row per reported cell (e.g. model and task; the keys the selection chooses or averages over
    are summed), the counts, and an estimate of the compute still to spend (tokens, FLOPs, GPU-hours on
    ``accelerator``); ``verbose`` lists every run first, each with its own estimate. ``overrides``: the user's, for
    the command that makes an evaluating artifact's training runs."""
    statuses = [planned_status(run, root, stale_after_seconds) for run in runs]
    computes = [
        run_compute(run.container) if status != "not available" else None for run, status in zip(runs, statuses)
    ]
    if verbose:
        console.print(runs_table(artifact, scale, runs, statuses, computes, accelerator))
    console.print(plan_summary_table(artifact, scale, runs, statuses, computes))
    counts = Counter(statuses)
    console.print(
        f"{len(runs)} runs: done {counts['done']}, pending {counts['pending']}, failed {counts['failed']}, "
        f"running elsewhere {counts['running']}, damaged {counts['damaged']}, not available {counts['not available']}"
    )
    for model, reason in unavailable_models(runs).items():
        console.print(f"  {model}: not available: {reason}", highlight=False, soft_wrap=True)
    to_run = [compute for compute, status in zip(computes, statuses) if status in TO_RUN]
    console.print(estimate_text(to_run, accelerator), highlight=False)
    if (note := committed_results_note(artifact.name, scale, runs, root, overrides)) is not None:
        console.print(note, highlight=False, soft_wrap=True, markup=False)
    if any(run.trained_by is not None for run in runs):
        print_training_runs(
            console, runs, statuses, root, stale_after_seconds, overrides, artifact.evaluates_of(scale).get("where")
        )


def print_training_runs(
    console: Console,
    runs: list[PlannedRun],
    statuses: list[str],
    root: Path,
    stale_after_seconds: float,
    overrides: Sequence[str] = (),
    where: Mapping | None = None,
) -> None:
    """An evaluating artifact's runs, each with the training run whose checkpoint it loads and that run's status,
    then the command that makes the training runs not done, only those its ``evaluates.where`` names (a sweep holds
    their evaluation runs back until then)."""
    trained = [run.trained_by for run in runs]
    training_statuses = {training.run_id: planned_status(training, root, stale_after_seconds) for training in trained}
    not_done = sum(status != "done" for status in training_statuses.values())
    if all(run.config is not None and run.config.evaluate.checkpoint == INITIAL for run in runs):
        console.print(
            f"Evaluation-only runs at the initial weights of these training runs' models (checkpoint "
            f"initial: the {len(training_statuses)} training runs need not be done):",
            highlight=False,
            soft_wrap=True,
        )
        trained_statuses = dict.fromkeys(training_statuses, "not needed")
        for run, status, training in zip(runs, statuses, trained):
            print_evaluation_run(console, run, status, training, trained_statuses)
        return
    console.print(
        f"Evaluation-only runs: each loads a training run's checkpoint ({len(training_statuses)} training "
        f"runs, {not_done} of them not done):",
        highlight=False,
        soft_wrap=True,
    )
    for run, status, training in zip(runs, statuses, trained):
        print_evaluation_run(console, run, status, training, training_statuses)
    missing = sorted(
        {(training.artifact, training.scale) for training in trained if training_statuses[training.run_id] != "done"}
    )
    if missing:
        commands = " and ".join(f"`{training_sweep_command(name, scale, overrides, where)}`" for name, scale in missing)
        console.print(
            f"The evaluation runs of training runs not done wait (a sweep runs them once those are done): "
            f"make those with {commands}",
            highlight=False,
            soft_wrap=True,
            markup=False,
        )


def print_evaluation_run(
    console: Console, run: PlannedRun, status: str, training: PlannedRun, training_statuses: dict[str, str]
) -> None:
    """One evaluation run: its id, status and the cell values it replaces, then the training run it takes."""
    replaced = " ".join(f"{key}={run.cell[key]}" for key in run.cell if run.cell[key] != training.cell.get(key))
    console.print(
        f"  {run.run_id or '-'} [{status}] {replaced} <- {training.artifact} ({training.scale}) "
        f"{training.run_id or '-'} [{training_statuses[training.run_id]}] {training.label}",
        highlight=False,
        soft_wrap=True,
        markup=False,
    )


TO_RUN = ("pending", "failed", "damaged")  # what a sweep would run
PLAN_COLUMNS = ["runs", "done", "missing", "failed", "running", "damaged", "n/a"]  # missing as in `list`: not done
SHOWN_IF_ANY = (
    "failed",
    "running",
    "damaged",
    "n/a",
)  # a column of zeros is left out (the totals line below names every count)


def plan_summary_table(
    artifact: Artifact, scale: str, runs: list[PlannedRun], statuses: list[str], computes: list[RunCompute | None]
) -> Table:
    """Run counts and training tokens still to spend per group of runs that differ only in the selection's keys."""
    summed = {*artifact.selection.get("choose", []), *artifact.selection.get("average", [])}
    keys = [key for key in cell_keys(runs) if key not in summed]
    groups: dict[tuple, list[tuple[PlannedRun, str, RunCompute | None]]] = {}
    for run, status, compute in zip(runs, statuses, computes):
        groups.setdefault(tuple(cell_text(run, key) for key in keys), []).append((run, status, compute))
    rows = [(values, plan_counts(members), pending_tokens(members)) for values, members in groups.items()]
    columns = [
        column for column in PLAN_COLUMNS if column not in SHOWN_IF_ANY or any(counts[column] for _, counts, _ in rows)
    ]
    table = Table(
        title=f"{artifact.name} ({scale}): {title_of(artifact, runs)}",
        caption=plan_caption(summed),
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        show_edge=False,
        collapse_padding=True,
    )
    for index, key in enumerate(keys):  # a long key (a model option) folds, its values stay whole
        table.add_column(key, overflow="fold", min_width=max((len(values[index]) for values, _, _ in rows), default=0))
    for column in [*columns, "tokens"]:
        table.add_column(column, justify="right", no_wrap=True)
    for values, counts, tokens in rows:
        table.add_row(*values, *(str(counts[column]) for column in columns), f"{tokens:.2g}")
    return table


def cell_keys(runs: list[PlannedRun]) -> list[str]:
    """Every key of the runs' cells, in order of appearance (a cell grid may give some cells more keys)."""
    return list(dict.fromkeys(key for run in runs for key in run.cell))


def cell_text(run: PlannedRun, key: str) -> str:
    """A cell value as an override writes it; empty for a key this run's cell does not have."""
    return override_value(run.cell[key]) if key in run.cell else ""


def plan_counts(members: list[tuple[PlannedRun, str, RunCompute | None]]) -> Counter:
    counts = Counter("n/a" if status == "not available" else status for _, status, _ in members)
    counts["runs"], counts["missing"] = len(members), len(members) - counts["done"]
    return counts


def pending_tokens(members: list[tuple[PlannedRun, str, RunCompute | None]]) -> int:
    return sum(compute.tokens for _, status, compute in members if status in TO_RUN and compute.tokens is not None)


def plan_caption(summed: set[str]) -> str:
    rows = f"each row sums the runs over {', '.join(sorted(summed))}; " if summed else ""
    return f"{rows}missing: not done; tokens: training tokens of the runs a sweep would run; --verbose lists every run"


def runs_table(
    artifact: Artifact,
    scale: str,
    runs: list[PlannedRun],
    statuses: list[str],
    computes: list[RunCompute | None],
    accelerator: Accelerator,
) -> Table:
    """Every run with its id, status and its own estimate (whatever its status; the totals count only what a sweep
    would run)."""
    caption = (
        f"tokens: training tokens (an evaluation-only run: the tokens it evaluates, forward only); "
        f"GPU-h: on {accelerator.describe()}"
    )
    table = Table(
        title=f"{artifact.name} ({scale}): every run",
        caption=caption,
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        show_edge=False,
        collapse_padding=True,
    )
    keys = cell_keys(runs)
    for key in keys:
        table.add_column(key)
    table.add_column("run_id", no_wrap=True, min_width=12)  # whole: people and scripts copy it from here
    table.add_column("status")
    for column in ("tokens", "FLOPs", "GPU-h"):
        table.add_column(column, justify="right", no_wrap=True)
    for run, status, compute in zip(runs, statuses, computes):
        table.add_row(
            *(cell_text(run, key) for key in keys), run.run_id or "-", status, *compute_cells(compute, accelerator)
        )
    return table


def compute_cells(compute: RunCompute | None, accelerator: Accelerator) -> tuple[str, str, str]:
    if compute is None or compute.tokens is None:
        return "-", "-", "-"
    tokens = compute.evaluated_tokens or compute.tokens
    hours = accelerator.gpu_hours(compute.flops, compute.model)  # at the model's measured MFU where there is one
    return f"{tokens:.2g}", f"{compute.flops:.2g}", f"{hours:.2g}"


def unavailable_models(runs: list[PlannedRun]) -> dict[str, str]:
    """Model name -> why it cannot run, for the planned runs that are not available."""
    return {str(run.cell.get("model")): run.unavailable for run in runs if run.unavailable is not None}


def planned_status(run: PlannedRun, root: Path, stale_after_seconds: float) -> str:
    if run.unavailable is not None:
        return "not available"
    status = run_status(run_directory(run, root), stale_after_seconds)
    return "pending" if status == "missing" else status


def print_summary(
    console: Console,
    artifact: Artifact,
    scale: str,
    runs: list[PlannedRun],
    outcomes: list[tuple[PlannedRun, RunOutcome]],
    not_started: list[PlannedRun] = (),
    waiting: Sequence[str] = (),
) -> None:
    """``waiting``: the ids of the evaluation runs held back until their training runs are done."""
    by_status: dict[str, list[tuple[PlannedRun, RunOutcome]]] = {}
    for run, outcome in outcomes:
        by_status.setdefault(outcome.status, []).append((run, outcome))
    ran = {run.run_id for run, _ in outcomes} | {run.run_id for run in not_started} | set(waiting)
    skipped = [run for run in runs if run.unavailable is None and run.run_id not in ran]
    unavailable = [run for run in runs if run.unavailable is not None]
    console.print(f"[bold]{artifact.name}[/] ({scale}) summary:")
    console.print(f"  done now: {len(by_status.get('done', []))}")
    for run, outcome in by_status.get("done", []):
        if outcome.detail:  # a diverged run
            console.print(f"    {run.label}: {outcome.detail}", style="yellow", highlight=False, soft_wrap=True)
    console.print(f"  skipped, already done: {len(skipped) + len(by_status.get('already done', []))}")
    for run, outcome in by_status.get("claimed", []):
        console.print(f"  running elsewhere: {run.label} ({outcome.detail})", soft_wrap=True)
    failed = by_status.get("failed", [])
    console.print(f"  failed: {len(failed)}", style="red" if failed else None)
    for run, outcome in failed:
        console.print(f"    {run.label}: {outcome.detail}", highlight=False, soft_wrap=True)
    if waiting:
        console.print(f"  waiting for their training runs: {len(waiting)}", style="yellow")
    print_unavailable(console, unavailable)
    if not_started:
        console.print(f"  not started: {len(not_started)}", style="red")


def print_unavailable(console: Console, unavailable: list[PlannedRun]) -> None:
    console.print(f"  not available: {len(unavailable)}")
    models_by_reason: dict[str, list[str]] = {}
    for run in unavailable:
        models = models_by_reason.setdefault(run.unavailable, [])
        if run.cell.get("model") not in models:
            models.append(run.cell.get("model"))
    for reason, models in models_by_reason.items():
        console.print(f"    {', '.join(map(str, models))}: {reason}", highlight=False, soft_wrap=True)


class SweepProgress(Progress):
    """A progress bar with done / failed / remaining counts and, below it, the runs in flight."""

    def __init__(self, total: int, console: Console) -> None:
        columns = (
            TextColumn("sweep"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[counts]}"),
            TimeElapsedColumn(),
        )
        self.total = total
        self.counts: Counter = Counter()
        self.in_flight: dict[str, str] = {}
        super().__init__(*columns, console=console)
        self.task = self.add_task("sweep", total=total, counts=self.counts_text())

    def get_renderables(self):
        yield self.make_tasks_table(self.tasks)
        for label in self.in_flight.values():
            yield Text(f"  running {label}", style="dim")

    def run_started(self, run: PlannedRun) -> None:
        self.in_flight[run.run_id] = run.label
        self.refresh()

    def run_finished(self, run: PlannedRun, outcome: RunOutcome) -> None:
        self.in_flight.pop(run.run_id, None)
        self.counts[outcome.status] += 1
        self.update(self.task, advance=1, counts=self.counts_text())

    def counts_text(self) -> str:
        done = self.counts["done"] + self.counts["already done"]
        remaining = self.total - sum(self.counts.values())
        return f"done {done}  failed {self.counts['failed']}  elsewhere {self.counts['claimed']}  remaining {remaining}"


# --- command line -------------------------------------------------------------------------------------------------


def add_list_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "artifacts", nargs="*", metavar="ARTIFACT", help=f"artifacts to list (default: all of {known_artifacts()})"
    )
    parser.add_argument("--scale", action="append", choices=SCALES, help="a scale to list (repeatable; default: all)")
    parser.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="only the runs whose cell has KEY=VALUE (repeatable; a key given twice takes either value)",
    )
    parser.add_argument("--root", type=Path, default=RUN_STORE, help=argparse.SUPPRESS)


def list_command(arguments: argparse.Namespace) -> int:
    console = Console()
    try:
        where = parse_where(arguments.where)
        with console.status("planning every artifact's runs (composing their configs) ..."):
            listing = list_artifacts(arguments.root, arguments.artifacts, arguments.scale or SCALES, where=where)
        _, bad_files = load_artifacts(arguments.artifacts or known_artifacts())
    except ValueError as error:
        print(f"xlstm-suite list: error: {error}", file=sys.stderr)
        return 2
    console.print(listing)
    console.print(column_notes(listing.renderables[0]), style="dim")
    for problem in bad_files:  # listed with the others above, and an error all the same
        print(f"xlstm-suite list: error: {problem}", file=sys.stderr)
    return 2 if bad_files else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="xlstm-suite list", description=__doc__)
    add_list_arguments(parser)
    return list_command(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
