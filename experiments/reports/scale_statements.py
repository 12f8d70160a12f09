"""What a scale's cells show besides the paper's findings, computed from them by the rules of
experiments.reports.statements and said on the page under "What this scale shows": how much of the paper's grid the
scale runs, which model is best in each task (or at each swept size), which models solve each task, how far apart the
cells are beside the spread of their seeds, which confidence intervals overlap, how each speed metric grows, where
models run out of memory, how the perplexity scales with the model size, and which model is lowest per bucket."""

import math

import pandas as pd

from experiments.config.artifacts import Artifact, load_artifact
from experiments.config.report_layouts import (
    BucketsReport,
    LinesReport,
    PointsReport,
    ScalingReport,
    SpeedReport,
)
from experiments.display import metric_label, model_name, value_name
from experiments.reports.finding_checks import (
    OUT_OF_MEMORY_AT,
    CheckContext,
    group_name,
    short_name,
)
from experiments.reports.power_laws import scaling_lines
from experiments.reports.rankings import order_groups
from experiments.reports.statements import (
    GROWTH_RULE,
    GROWTH_TOLERANCE,
    OVERLAP_RULE,
    confidence_interval,
    digits_for,
    growth_class,
    growth_exponent,
    interval_overlaps,
    separation,
    signed,
)


def grid_cells(artifact: Artifact, scale: str) -> list[dict]:
    """The scale's cells without composing a config: for an evaluating artifact, its evaluated training cells with
    its own."""
    cells = artifact.cells(scale)
    evaluates = artifact.evaluates_of(scale)
    if not evaluates:
        return cells
    source = load_artifact(evaluates["artifact"])
    where = evaluates.get("where") or {}
    trained = [
        cell
        for cell in source.cells(scale)
        if all(cell.get(key) in (value if isinstance(value, list) else [value]) for key, value in where.items())
    ]
    return [training | cell for training in trained for cell in cells]


def coverage_markdown(artifact: Artifact, scale: str) -> str | None:
    """How many of the paper grid's models, seeds and values of each other grid key this scale's grid runs."""
    if scale == "paper":
        return None
    paper, here = grid_cells(artifact, "paper"), grid_cells(artifact, scale)
    if not paper:
        return None
    parts = []
    for key in dict.fromkeys(key for cell in paper for key in cell):
        theirs = list(dict.fromkeys(cell[key] for cell in paper if key in cell))
        ours = [value for value in dict.fromkeys(cell[key] for cell in here if key in cell) if value in theirs]
        if len(theirs) < 2 or len(ours) == len(theirs) or not ours:  # none of the paper's: stand-ins (settings)
            continue
        missing = [
            value_name(key, value) if key in ("model", "task") else f"{value}" for value in theirs if value not in ours
        ]
        name = {"model": "models", "seed": "seeds"}.get(key, f"values of {key}")
        parts.append(f"{len(ours)} of the paper's {len(theirs)} {name} (not run here: {', '.join(missing)})")
    if not parts:
        return "This scale runs every model and grid value of the paper's grid (at its own sizes and budget)."
    return "Of the paper's grid this scale runs " + "; ".join(parts) + "."


def best_markdown(table: pd.DataFrame, names: pd.Series, context: CheckContext, groups: list[str]) -> str | None:
    """The best cell (by the selection mode) in each group: each task, or each swept x."""
    shown = table.dropna(subset=["ours"])
    if context.out_of_memory in shown:
        shown = shown[~(shown[context.out_of_memory].fillna(0) >= OUT_OF_MEMORY_AT)]
    if shown.empty or len(shown) < 2:
        return None
    digits = digits_for(shown["ours"])
    parts = []
    for _group, cells in shown.groupby(groups, sort=False) if groups else [((), shown)]:
        best = cells.sort_values("ours", ascending=context.mode == "min", kind="stable").iloc[0]
        label = group_name(groups, best)
        ties = cells[cells["ours"] == best["ours"]]
        who = ", ".join(short_name(table.loc[index], context) if groups else names[index] for index in ties.index)
        parts.append(f"{label + ': ' if label else ''}{who} ({best['ours']:.{digits}f})")
    word = "lowest" if context.mode == "min" else "highest"
    return f"Best ({word} {context.metric}): " + "; ".join(parts) + "."


def solved_markdown(
    table: pd.DataFrame, names: pd.Series, solved_at: float, metric: str, groups: list[str]
) -> str | None:
    """Per task, the models whose every run reaches ``solved_at``, those some runs reach, and those none does; a cell
    is named by its model where that is the only one of the model in its group, else by its whole name."""
    shown = table[table["runs"] > 0]
    if shown.empty:
        return None
    lines = []
    for _group, cells in shown.groupby(groups, sort=False) if groups else [((), shown)]:
        label = group_name(groups, cells.iloc[0])
        repeated = cells["model"].duplicated().any()
        who = {index: names[index] if repeated else model_name(cells.at[index, "model"]) for index in cells.index}
        every = [who[row.Index] for row in cells.itertuples() if row.solved == row.runs]
        some = [
            f"{who[row.Index]} ({row.solved} of {row.runs})" for row in cells.itertuples() if 0 < row.solved < row.runs
        ]
        none = [who[row.Index] for row in cells.itertuples() if row.solved == 0]
        lines.append(
            f"- {label + ': ' if label else ''}solved in every run by {', '.join(every) or 'no model'}"
            + (f"; in some runs by {', '.join(some)}" if some else "")
            + (f"; in none by {', '.join(none)}" if none else "")
            + "."
        )
    return f"Solved ({metric} >= {solved_at:g}, our threshold), run by run:\n\n" + "\n".join(lines)


def separation_markdown(table: pd.DataFrame, names: pd.Series, groups: list[str]) -> str | None:
    """Within each group: the closest two cells' means against the widest range of one cell's seeds."""
    lines = []
    for _group, cells in table.groupby(groups, sort=False) if groups else [((), table)]:
        found = separation(
            list(names[cells.index]), list(cells["ours"]), list(cells["min"]), list(cells["max"]), list(cells["runs"])
        )
        if found is not None:
            label = group_name(groups, cells.iloc[0])
            digits = digits_for([found.gap, found.widest])
            lines.append(f"{label + ': ' if label else ''}{found.sentence(digits)}")
    return "\n\n".join(lines) or None


def intervals_markdown(layout: PointsReport, table: pd.DataFrame, names: pd.Series) -> str | None:
    intervals = {
        names[index]: confidence_interval(values, layout.confidence) for index, values in table["values"].items()
    }
    found = interval_overlaps(intervals)
    if len(found.intervals) < 2:
        return None
    digits = digits_for([bound for bounds in found.intervals.values() for bound in bounds])
    shown = "; ".join(f"{name} [{low:.{digits}f}, {high:.{digits}f}]" for name, (low, high) in found.intervals.items())
    interval = f"{layout.confidence:.0%} t-interval"
    return (
        f"{found.sentence(interval, digits)} Rule: Student's t interval of the mean over a cell's runs; "
        f"{OVERLAP_RULE}. The intervals: {shown}."
    )


def growth_markdown(layout: SpeedReport, table: pd.DataFrame) -> str | None:
    """Each line's growth class and exponent k of each metric in x (cells out of memory left out)."""
    metrics = [layout.metric, *layout.more_metrics]
    values = table.rename(columns={"ours": layout.metric}) if layout.metric not in table else table
    if layout.out_of_memory in values:
        values = values[~(values[layout.out_of_memory].fillna(0) >= OUT_OF_MEMORY_AT)]
    rows = []
    for line, cells in values.groupby(layout.lines, sort=False):
        row = [value_name(layout.lines, line)]
        for metric in metrics:
            points = cells.dropna(subset=[metric])
            k = growth_exponent(points[layout.x], points[metric]) if len(points) else math.nan
            row.append("" if math.isnan(k) else f"{growth_class(k)} (k {signed(k)})")
        rows.append(row)
    if not rows:
        return None
    header = [layout.lines, *(metric_label(metric) for metric in metrics)]
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + " --- |" * len(header),
        *("| " + " | ".join(row) + " |" for row in rows),
    ]
    return f"Growth in {layout.x}, per model and metric; {GROWTH_RULE}.\n\n" + "\n".join(lines)


def out_of_memory_markdown(layout: SpeedReport, table: pd.DataFrame) -> str | None:
    if layout.out_of_memory is None or layout.out_of_memory not in table:
        return None
    parts = []
    for line, cells in table.groupby(layout.lines, sort=False):
        out = cells[cells[layout.out_of_memory].fillna(0) >= OUT_OF_MEMORY_AT][layout.x]
        fits = cells[~(cells[layout.out_of_memory].fillna(0) >= OUT_OF_MEMORY_AT)].dropna(subset=["ours"])[layout.x]
        parts.append(
            f"{value_name(layout.lines, line)} "
            + (f"first at {out.min():g}" if len(out) else f"never (up to {fits.max():g})")
        )
    return f"Out of memory (over the configured limit, so not run) by {layout.x}: " + "; ".join(parts) + "."


def power_law_classes_markdown(layout: ScalingReport, table: pd.DataFrame) -> str | None:
    def trend(b: float) -> str:
        return "flat" if abs(b) < GROWTH_TOLERANCE else "falling" if b < 0 else "rising"

    parts = [
        f"{value_name(layout.lines, line.line)} b {line.fit.b:+.3f} ({trend(line.fit.b)})"
        for line in scaling_lines(table, layout.lines, layout.cells)
        if line.fit is not None
    ]
    if not parts:
        return None
    return (
        f"{layout.metric} against the parameter count N, fitted as a N^b: "
        + "; ".join(parts)
        + f". Rule: flat when |b| < {GROWTH_TOLERANCE:g} (the metric changes by under {GROWTH_TOLERANCE:g}% per 1% "
        "of N), falling or rising otherwise."
    )


def buckets_markdown(layout: BucketsReport, table: pd.DataFrame, mode: str) -> str | None:
    shown = table.dropna(subset=layout.bucket_metrics(), how="all")
    if len(shown) < 2:
        return None
    parts = []
    for bucket, metric in zip(layout.buckets, layout.bucket_metrics()):
        cells = shown.dropna(subset=[metric])
        if cells.empty:
            continue
        best = cells.sort_values(metric, ascending=mode == "min", kind="stable").iloc[0]
        parts.append(f"{bucket}: {model_name(best['model'])}")
    return f"{'Lowest' if mode == 'min' else 'Highest'} {layout.metric} per bucket: " + "; ".join(parts) + "."


def scale_statements(
    artifact: Artifact, table: pd.DataFrame, names: pd.Series, scale: str, context: CheckContext
) -> list[str]:
    """The computed paragraphs of "What this scale shows", in the order above; those without data left out."""
    layout, report = artifact.layout, artifact.report
    groups = order_groups(table, report["cells"])
    finished = table[table["runs"] > 0]
    paragraphs = [coverage_markdown(artifact, scale)]
    if isinstance(layout, SpeedReport):
        paragraphs += [
            best_markdown(finished, names, context, [layout.x]),
            growth_markdown(layout, finished),
            out_of_memory_markdown(layout, finished),
        ]
    elif isinstance(layout, BucketsReport):
        paragraphs += [
            best_markdown(finished, names, context, groups),
            buckets_markdown(layout, finished, context.mode),
        ]
    elif isinstance(layout, ScalingReport):
        sizes = [key for key in layout.cells if key != layout.lines]
        paragraphs.append(best_markdown(finished, names, context, sizes))
    elif isinstance(layout, LinesReport):
        row_key = layout.rows if isinstance(layout.rows, str) else None  # a row of panels per value of a cell key
        groups_of_lines = [key for key in (row_key, layout.panels, layout.x) if key]
        paragraphs.append(best_markdown(finished, names, context, groups_of_lines))
    else:
        paragraphs.append(best_markdown(finished, names, context, groups))
    if report.get("solved_at") is not None:
        paragraphs.append(solved_markdown(finished, names, report["solved_at"], report["metric"], groups))
    if (finished["runs"] > 1).any():
        paragraphs.append(separation_markdown(finished, names, groups))
    if isinstance(layout, PointsReport):
        paragraphs.append(intervals_markdown(layout, finished, names))
    if isinstance(layout, ScalingReport):
        paragraphs.append(power_law_classes_markdown(layout, finished))
    return [paragraph for paragraph in paragraphs if paragraph]
