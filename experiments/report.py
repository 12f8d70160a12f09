"""`xlstm-suite report`: apply an artifact's selection rule to its finished runs; write .md, .csv, .png, .pdf."""

import hashlib
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from rich.console import Console

from experiments.artifacts import SCALES, Artifact, known_artifacts, load_artifact
from experiments.atomic import write_text_atomic
from experiments.display import model_name
from experiments.figures import grouped_heatmap, save
from experiments.paths import PAPER_NUMBERS, REPORTS, RESULTS
from experiments.run_store import runs_frame
from experiments.selection import select_cells

MISSING, NOT_AVAILABLE = "missing", "n/a"


def run_table(artifact: Artifact, scale: str, root: Path, extra_overrides: Sequence[str] = ()) -> pd.DataFrame:
    """One row per planned run: its cell keys, status, the reason a model is not available, and its metrics."""
    runs = runs_frame(artifact.runs(scale, extra_overrides), root)
    runs["unavailable"] = runs["reason"].where(runs["status"] == "unavailable")
    return runs


def paper_values(artifact: Artifact, metric: str) -> pd.DataFrame | None:
    """The paper's printed numbers for this artifact (results/paper/<artifact>.csv), if it prints any."""
    path = PAPER_NUMBERS / f"{artifact.name}.csv"
    if not path.exists():
        return None
    table = pd.read_csv(path)
    return table[table["metric"] == metric]


def cell_table(artifact: Artifact, runs: pd.DataFrame) -> pd.DataFrame:
    """One row per reported cell, missing and unavailable cells included: model, cell keys, metric, ours, paper,
    runs, note."""
    report, selection = artifact.report, artifact.selection
    cells, metric = list(report["cells"]), report["metric"]
    done = runs[runs["status"] == "done"]
    selected = select_cells(
        done, cells=cells, choose=list(selection.get("choose", [])), average=list(selection.get("average", [])),
        select_metric=selection["metric"], mode=selection["mode"], report_metric=metric,
    ) if len(done) else pd.DataFrame(columns=[*cells, "ours", "std", "runs"])
    every_cell = runs.groupby(cells, sort=False, dropna=False).agg(
        unavailable=("unavailable", "first"), planned=("status", "size"),
        finished=("status", lambda status: int((status == "done").sum())),
    ).reset_index()
    table = every_cell.merge(selected, on=cells, how="left")
    table["runs"] = table["runs"].fillna(0).astype(int)
    table["note"] = [
        f"not available: {unavailable}" if isinstance(unavailable, str)
        else ("" if finished == planned else f"{planned - finished} of {planned} runs missing")
        for unavailable, finished, planned in zip(table["unavailable"], table["finished"], table["planned"])
    ]
    table["metric"] = metric
    paper = paper_values(artifact, metric)
    if paper is not None:
        table = table.merge(paper[[*cells, "paper"]], on=cells, how="left")
    else:
        table["paper"] = float("nan")
    return table[[*cells, "metric", "ours", "paper", "runs", "note"]]


def _task_groups(tasks: list[str]) -> dict[str, str]:
    from tasks.formal_languages import get_task

    return {task: get_task(task).group for task in tasks}


def heatmap(artifact: Artifact, table: pd.DataFrame, scale: str):
    models = list(dict.fromkeys(table["model"]))
    groups = _task_groups(list(dict.fromkeys(table["task"])))
    group_order = list(dict.fromkeys(groups.values()))
    tasks = sorted(groups, key=lambda task: group_order.index(groups[task]))  # stable within a group
    values = table.pivot(index="model", columns="task", values="ours").reindex(index=models, columns=tasks)
    notes = table.assign(
        short=[NOT_AVAILABLE if note.startswith("not available") else (MISSING if pd.isna(ours) else "")
               for note, ours in zip(table["note"], table["ours"])]
    ).pivot(index="model", columns="task", values="short").reindex(index=models, columns=tasks)
    values.index = notes.index = [model_name(model) for model in models]
    title = f"{artifact.title} [{scale} scale]"
    return grouped_heatmap(values, notes, groups, title, colorbar_label="scaled accuracy")


def markdown(artifact: Artifact, table: pd.DataFrame, scale: str, figure_name: str | None,
             extra_overrides: Sequence[str]) -> str:
    lines = [f"# {artifact.name} ({scale} scale)", "", artifact.title, ""]
    if extra_overrides:
        lines += [f"Runs with the overrides `{' '.join(extra_overrides)}`.", ""]
    selection = artifact.selection
    lines.append(
        f"Selection: per cell, the {', '.join(selection.get('choose', [])) or 'run'} with the best "
        f"{selection['metric']} ({selection['mode']}) averaged over {', '.join(selection.get('average', [])) or 'nothing'}; "
        f"`ours` is the mean of {artifact.report['metric']} over the chosen runs (`runs` of them)."
    )
    lines.append("")
    if figure_name:
        lines += [f"![{artifact.name}]({figure_name})", ""]
    shown = table.copy()
    shown["ours"] = shown["ours"].map(lambda v: "" if pd.isna(v) else f"{v:.3f}")
    shown["paper"] = shown["paper"].map(lambda v: "" if pd.isna(v) else f"{v:.3f}")
    lines.append(shown.to_markdown(index=False))
    return "\n".join(lines) + "\n"


def report_stem(name: str, extra_overrides: Sequence[str]) -> str:
    """The report's file name: the artifact's, plus a hash of the overrides for an ablation of it."""
    if not extra_overrides:
        return name
    return f"{name}-{hashlib.sha256(' '.join(extra_overrides).encode()).hexdigest()[:8]}"


def write_report(name: str, scale: str, root: Path, destination: Path, extra_overrides: Sequence[str] = ()) -> list[Path]:
    artifact = load_artifact(name)
    table = cell_table(artifact, run_table(artifact, scale, root, extra_overrides))
    stem = destination / scale / report_stem(name, extra_overrides)
    stem.parent.mkdir(parents=True, exist_ok=True)
    written = []
    figure_name = None
    if artifact.report["kind"] == "heatmap":
        written += save(heatmap(artifact, table, scale), stem)
        figure_name = stem.with_suffix(".png").name
    csv_path, md_path = stem.with_suffix(".csv"), stem.with_suffix(".md")
    write_text_atomic(csv_path, table.to_csv(index=False))
    write_text_atomic(md_path, markdown(artifact, table, scale, figure_name, extra_overrides))
    return [md_path, csv_path, *written]


def report_command(arguments) -> int:
    console = Console()
    if arguments.scale not in SCALES:
        raise ValueError(f"unknown scale {arguments.scale!r}; valid choices: {list(SCALES)}")
    names = known_artifacts() if arguments.artifact == "all" else [arguments.artifact]
    for name in names:
        load_artifact(name)  # unknown names fail before anything is written
    root = Path(arguments.root) if arguments.root else RESULTS / "runs"
    destination = Path(arguments.destination) if arguments.destination else REPORTS
    for name in names:
        for path in write_report(name, arguments.scale, root, destination, arguments.overrides):
            console.print(f"wrote {path}")
    return 0
