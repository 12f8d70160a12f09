"""`xlstm-suite report`: apply an artifact's selection rule to its finished runs; write .md, .csv, .png, .pdf and
the per-run results behind them (.runs.csv).

A report never destroys results: an artifact without finished runs at the scale writes nothing, and an existing
report is replaced only by one with at least as many finished cells (or with ``--force``), checked under a lock on
the report folder at the moment of replacement: of two reports racing to the same folder, the one with fewer cells
says so and is not written.
"""

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from rich.console import Console

from experiments.config.artifacts import (
    Artifact,
    PlannedRun,
    known_artifacts,
    load_artifact,
    named_artifacts,
)
from experiments.reports.committed_runs import (
    committed_path,
    committed_rows,
    metric_columns,
    per_run_rows,
    with_committed,
    with_sizes,
    write_committed,
)
from experiments.reports.detail_table import SUFFIX as DETAIL_SUFFIX
from experiments.reports.detail_table import detail_frame, detail_markdown
from experiments.reports.figures import save
from experiments.reports.findings import findings_of
from experiments.reports.index_page import write_index
from experiments.reports.kinds import report_figure
from experiments.reports.learning_curves import FIGURE_SUFFIX as CURVES_FIGURE_SUFFIX
from experiments.reports.learning_curves import SUFFIX as CURVES_SUFFIX
from experiments.reports.learning_curves import (
    curve_metric,
    curves_frame,
    curves_path,
    read_committed_curves,
    stage_curves,
)
from experiments.reports.paper_columns import (
    paired_names,
    paper_columns_problems,
    unrecorded_metrics,
    with_paper_columns,
)
from experiments.reports.paper_numbers import (
    PAPER_ROW,
    paper_numbers_of,
    printed_row_names,
    with_paper_numbers,
)
from experiments.reports.parameter_counts import with_parameter_counts
from experiments.reports.report_text import figure_title, markdown
from experiments.reports.report_variants import SUFFIX as VARIANT_SUFFIX
from experiments.reports.report_variants import committed_variants, write_variant
from experiments.reports.repository import repository_reports, repository_root
from experiments.reports.selection import merged_runs, select_cells
from experiments.reports.staging import locked, publish, staging_folder
from experiments.stop_signals import stop_signals_raise
from experiments.sweeps.run_store import DIVERGED_METRIC, runs_frame
from experiments.sweeps.run_subset import parse_where, runs_where


@dataclass
class ReportOutcome:
    """``written`` (with the paths), ``empty`` (no finished run at the scale) or ``kept`` (the existing report has
    more finished cells); ``message`` says which, with the counts."""

    status: str
    message: str
    paths: list[Path] = field(default_factory=list)


def run_table(runs: Sequence[PlannedRun], root: Path) -> pd.DataFrame:
    """One row per planned run: its cell keys, status, the reason a model is not available, and its metrics."""
    table = runs_frame(runs, root)
    table["unavailable"] = table["reason"].where(table["status"] == "unavailable")
    return table


def cell_table(artifact: Artifact, runs: pd.DataFrame) -> pd.DataFrame:
    """One row per reported cell, missing and unavailable cells included: model, cell keys, metric, ours, std,
    paper, runs, note (missing, unavailable or diverged runs), the layout's cell metrics (e.g. the parameter count),
    ours and the paper's of each of a table report's ``paper_columns`` (``<column> ours``, ``<column> paper``;
    experiments.reports.paper_columns) and the chosen runs' values (empty without finished runs). Cells that ``selection.merge`` merges are one row
    (experiments.reports.selection.merged_runs)."""
    report, selection, layout = artifact.report, artifact.selection, artifact.layout
    cells, metric, cell_metrics = list(report["cells"]), report["metric"], layout.cell_metrics()
    runs, choose_merged = merged_runs(runs, selection.get("merge") or {}, cells)
    done = runs[runs["status"] == "done"]
    unrecorded = unrecorded_metrics(layout, done)
    if len(done) and unrecorded:
        raise ValueError(
            f"report.paper_columns: no finished run of {artifact.name} records {unrecorded}; they "
            f"record {metric_columns(done, cells)}"
        )
    selected = (
        select_cells(
            done,
            cells=cells,
            choose=[*selection.get("choose", []), *choose_merged],
            average=list(selection.get("average", [])),
            select_metric=selection["metric"],
            mode=selection["mode"],
            report_metric=metric,
            solved_at=report.get("solved_at"),
            cell_metrics=cell_metrics,
        )
        if len(done)
        else pd.DataFrame(columns=[*cells, "ours", "std", "min", "max", "runs", "solved", "values", *cell_metrics])
    )
    runs = runs.assign(diverged=(runs["status"] == "done") & (runs.get(DIVERGED_METRIC, 0.0) == 1.0))
    every_cell = (
        runs.groupby(cells, sort=False, dropna=False)
        .agg(
            unavailable=("unavailable", "first"),
            planned=("status", "size"),
            finished=("status", lambda status: int((status == "done").sum())),
            diverged=("diverged", "sum"),
        )
        .reset_index()
    )
    table = every_cell.merge(selected, on=cells, how="left")
    table["runs"] = table["runs"].fillna(0).astype(int)
    table["solved"] = table["solved"].astype("Int64")
    table["values"] = [values if isinstance(values, tuple) else () for values in table["values"]]
    table["note"] = [
        f"not available: {unavailable}"
        if isinstance(unavailable, str)
        else "; ".join(
            [
                *([f"{planned - finished} of {planned} runs missing"] if finished < planned else []),
                *([f"{diverged} of {finished} runs diverged (non-finite training loss)"] if diverged else []),
            ]
        )
        for unavailable, finished, planned, diverged in zip(
            table["unavailable"], table["finished"], table["planned"], table["diverged"]
        )
    ]
    table["metric"] = metric
    table["paper"] = with_paper_numbers(table, artifact.paper, cells)
    row_names = printed_row_names(table, artifact.paper, cells)
    if row_names is not None:
        table[PAPER_ROW] = row_names
    table = with_paper_columns(table, layout, paper_numbers_of(artifact.paper), cells)
    merged_choices = [f"chosen {column}" for column in choose_merged if f"chosen {column}" in table]
    return table[
        [
            *cells,
            *([PAPER_ROW] if row_names is not None else []),
            "metric",
            "ours",
            "std",
            "min",
            "max",
            "paper",
            "runs",
            "solved",
            "note",
            *merged_choices,
            *(cell_metric for cell_metric in cell_metrics if cell_metric in table),
            *paired_names(layout),
            "values",
        ]
    ]


def row_keys(artifact: Artifact, planned: Sequence[PlannedRun], scale: str) -> list[str]:
    """The keys of a per-run row: the report's cells, then every key of the runs' cells (an evaluation's include
    those of the training run it evaluates: its model, seed and size) and of the scale's grid."""
    return list(
        dict.fromkeys(
            [*artifact.report["cells"], *(key for run in planned for key in run.cell), *artifact.cell_keys(scale)]
        )
    )


def report_stem(name: str, extra_overrides: Sequence[str], where: Sequence[str] = ()) -> str:
    """The report's file name: the artifact's, plus a hash of the overrides for an ablation of it and of the
    ``--where`` pairs for part of its grid (a part never replaces the whole grid's report)."""
    if not extra_overrides and not where:
        return name
    described = " ".join([*extra_overrides, *(f"--where {pair}" for pair in where)])
    return f"{name}-{hashlib.sha256(described.encode()).hexdigest()[:8]}"


def finished_cells(csv_path: Path) -> int | None:
    """How many cells of an existing report's table have finished runs; None if there is no report."""
    if not csv_path.exists():
        return None
    return int((pd.read_csv(csv_path)["runs"] > 0).sum())


def write_report(
    name: str,
    scale: str,
    root: Path,
    destination: Path,
    extra_overrides: Sequence[str] = (),
    force: bool = False,
    planned: Sequence[PlannedRun] | None = None,
    where: Sequence[str] = (),
) -> ReportOutcome:
    """``planned``: the artifact's runs at the scale with ``extra_overrides``, where the caller has planned them
    (only the cells of the ``where`` pairs, KEY=VALUE, when there are any)."""
    artifact = load_artifact(name).at_scale(scale)
    if planned is None:
        planned = runs_where(artifact.runs(scale, extra_overrides), parse_where(where))
    stem = destination / scale / report_stem(name, extra_overrides, where)
    cell_keys = row_keys(artifact, planned, scale)
    committed = committed_rows(committed_path(stem), committed_path(repository_reports() / scale / stem.name))
    runs = with_parameter_counts(with_committed(run_table(planned, root), committed, cell_keys), planned)
    table = cell_table(artifact, runs)
    curve_of = curve_metric(artifact.selection["metric"])
    curves = None
    if curve_of is not None:
        committed_curves = read_committed_curves(
            curves_path(stem), curves_path(repository_reports() / scale / stem.name)
        )
        curves = curves_frame(runs, planned, root, curve_of, cell_keys, committed_curves)
    finished = int((table["runs"] > 0).sum())  # a cell of diverged runs is finished, its value NaN
    if finished == 0:
        return ReportOutcome(
            "empty",
            f"{name} ({scale}): no finished runs of its {len(planned)} planned runs; "
            f"nothing written (run `xlstm-suite sweep {name} --scale {scale}` first)",
        )

    def refusal() -> str | None:
        return replacement_refusal(stem, finished, len(table), force)

    if (kept := refusal()) is not None:  # before the figures are drawn; checked again when the files replace it
        return ReportOutcome("kept", f"{name} ({scale}): {kept}")
    try:
        described = [*extra_overrides, *(f"--where {pair}" for pair in where)]  # what the page says it shows
        variant = (list(extra_overrides), list(where)) if extra_overrides or where else None
        paths = write_files(artifact, planned, runs, table, scale, stem, described, refusal, curves, variant)
    except ReplacedMeanwhile as kept:
        return ReportOutcome("kept", f"{name} ({scale}): not written: another report replaced it meanwhile; {kept}")
    return ReportOutcome("written", f"{name} ({scale}): {finished} of {len(table)} cells finished", paths)


def replacement_refusal(stem: Path, finished: int, cells: int, force: bool) -> str | None:
    """Why a report of ``finished`` of ``cells`` finished cells must not replace the one at ``stem``: it has more
    (``force`` replaces it anyway); None when there is none or it has no more."""
    existing = finished_cells(stem.with_suffix(".csv"))
    if existing is None or finished >= existing or force:
        return None
    return (
        f"kept {stem.with_suffix('.md')}: it has {existing} finished cells, this report would have {finished} of "
        f"{cells}; finish the missing runs, or pass --force to replace it"
    )


class ReplacedMeanwhile(Exception):
    """A report written while this one was drawn has more finished cells; the message says which."""


def write_files(
    artifact: Artifact,
    planned: Sequence[PlannedRun],
    runs: pd.DataFrame,
    table: pd.DataFrame,
    scale: str,
    stem: Path,
    extra_overrides: Sequence[str],
    refusal: Callable[[], str | None],
    curves: pd.DataFrame | None = None,
    variant: tuple[list[str], list[str]] | None = None,
) -> list[Path]:
    """The per-run results, the cell table, the figure and the page, written into a staging folder and then moved
    into place together (a report killed midway leaves the previous one whole). They replace the existing report
    only if ``refusal()``, asked under a lock on the folder at the moment of replacement, has no objection (a report
    written meanwhile may have more finished cells): ReplacedMeanwhile otherwise."""
    with staging_folder(stem.parent) as staging:
        staged = staging / stem.name
        keys = row_keys(artifact, planned, scale)
        write_committed(committed_path(staged), per_run_rows(with_sizes(runs, planned, keys), keys))
        figure = report_figure(artifact, table, figure_title(artifact, planned, scale))
        figure_name = None
        if figure is not None:
            save(figure, staged)
            figure_name = stem.with_suffix(".png").name
        staged.with_suffix(".csv").write_text(  # runs.csv has the values
            table.drop(columns="values").rename(columns={"std": SAMPLE_STD}).to_csv(index=False)
        )
        page = markdown(
            artifact, planned, table, scale, figure_name, extra_overrides, findings_of(artifact.paper), run_rows=runs
        )
        detail = detail_frame(artifact.layout, runs)
        if detail is not None:
            detail_csv = staged.with_name(staged.name + DETAIL_SUFFIX)
            detail.to_csv(detail_csv, index_label="name")
            page += "\n" + detail_markdown(artifact.layout, runs, artifact.selection["mode"], detail_csv.name)
        if curves is not None and not curves.empty:
            panel_keys = [key for key in artifact.report["cells"] if key != "model"]
            panel_keys += [key for key in artifact.selection.get("choose", []) if key not in panel_keys]
            finished = int((runs["status"] == "done").sum())
            page += "\n" + stage_curves(curves, staged, panel_keys, f"{artifact.name} ({scale})", finished)
        staged.with_suffix(".md").write_text(page)
        if variant is not None:  # what `report all` regenerates it with
            write_variant(staged, *variant)
        with locked(stem.parent):
            if (kept := refusal()) is not None:
                raise ReplacedMeanwhile(kept)
            published = publish(staging, stem.parent)
    return sorted(published, key=lambda path: REPORT_FILE_ORDER.index(path.name.removeprefix(stem.name)))


SAMPLE_STD = "sample std"  # the cell table's ``std`` as its .csv names it (ddof 1)
REPORT_FILE_ORDER = [
    ".md",
    ".csv",
    ".runs.csv",
    DETAIL_SUFFIX,
    CURVES_SUFFIX,
    ".png",
    ".pdf",
    f"{CURVES_FIGURE_SUFFIX}.png",
    f"{CURVES_FIGURE_SUFFIX}.pdf",
    VARIANT_SUFFIX,
]


def report_command(arguments, planned: dict[str, list[PlannedRun]] | None = None) -> int:
    """Exit code 0 if a report was written (for ``all``: at least one), else 1. ``planned``: artifact name -> its
    runs at the arguments' scale and overrides, where the caller has planned them."""
    console = Console()
    names = named_artifacts(arguments.artifact, arguments.scale)
    if arguments.artifact == "all":  # an artifact without the scale has nothing to report there: one line each
        for name in sorted(set(known_artifacts()) - set(names)):
            console.print(f"[yellow]skipped[/] {name}: it declares no {arguments.scale} scale", highlight=False)
    for name in names:  # unknown names, bad paper numbers and paper columns fail before anything is written
        artifact = load_artifact(name)
        numbers = paper_numbers_of(artifact.paper)
        problems = [
            *numbers.problems(list(artifact.report["cells"])),
            *paper_columns_problems(artifact.at_scale(arguments.scale).layout, numbers),
        ]
        if problems:
            raise ValueError(f"configs/paper/{name}.yaml: " + "; ".join(problems))
    root = Path(arguments.root) if arguments.root else repository_root() / "results" / "runs"
    destination = Path(arguments.destination) if arguments.destination else repository_reports()
    # (artifact, overrides, where pairs, its planned runs where the caller planned them, whether a skip goes unsaid:
    # the plain form of an artifact whose committed reports were made with overrides, regenerated after it)
    reports = []
    for name in names:
        variants = []
        if arguments.artifact == "all" and not arguments.overrides:  # and each committed report made with overrides
            variants = committed_variants(repository_reports(), arguments.scale, name)
        plain = (name, list(arguments.overrides), list(getattr(arguments, "where", ())), (planned or {}).get(name))
        reports += [(*plain, bool(variants)), *((name, overrides, where, None, False) for overrides, where in variants)]
    outcomes = []
    for name, overrides, where, planned_runs, quiet_skip in reports:
        with stop_signals_raise():  # a stop while it writes removes its staging folder (cli names the signal)
            outcome = write_report(
                name, arguments.scale, root, destination, overrides, arguments.force, planned_runs, where
            )
        outcomes.append(outcome)
        if outcome.status == "written":
            console.print(outcome.message, highlight=False)
            for path in outcome.paths:
                console.print(f"  wrote {path}", highlight=False, soft_wrap=True)
        elif not quiet_skip:
            console.print(f"[yellow]skipped[/] {outcome.message}", highlight=False, soft_wrap=True)
    if any(outcome.status == "written" for outcome in outcomes):  # the results page of every report there
        console.print(f"  wrote {write_index(destination)}", highlight=False, soft_wrap=True)
        return 0
    return 1
