"""Report figures by kind: an artifact's ``report.kind`` picks one, its layout (experiments.config.report_layouts)
places the cells. ``table`` draws its cells as bars, ours beside the paper's where it prints numbers."""

from collections.abc import Callable

import matplotlib.pyplot as plt
import pandas as pd

from experiments.config.artifacts import Artifact
from experiments.config.configuration import task_config
from experiments.config.report_layouts import (
    HeatmapReport,
    LinesReport,
    PointsReport,
    ScalingReport,
)
from experiments.display import (
    metric_label,
    metric_label_with_split,
    metric_scale,
    value_name,
)
from experiments.reports.bucket_figure import bucket_figure
from experiments.reports.figures import (
    bar_panels,
    grouped_heatmap,
    line_panels,
    point_panels,
    power_law_panel,
)
from experiments.reports.palette import colours
from experiments.reports.power_laws import scaling_lines, short_count
from experiments.reports.rankings import cell_names
from experiments.reports.speed_figure import speed_figure
from experiments.reports.statements import confidence_interval
from tasks.registry import task_spec

MISSING, NOT_AVAILABLE, DIVERGED = "missing", "n/a", "diverged"


def names(table: pd.DataFrame, key: str | None) -> dict:
    return {} if key is None else {value: value_name(key, value) for value in table[key]}


def column_groups(key: str, columns: list) -> dict:
    """Each column's group: a task's spec group (the task registry gives it), none for other keys."""
    if key != "task":
        return {column: "" for column in columns}
    return {task: task_spec(task_config(task)).group for task in columns}


def heatmap_figure(layout: HeatmapReport, table: pd.DataFrame, title: str) -> plt.Figure:
    rows = list(dict.fromkeys(table[layout.rows]))
    groups = column_groups(layout.columns, list(dict.fromkeys(table[layout.columns])))
    group_order = list(dict.fromkeys(groups.values()))
    columns = sorted(groups, key=lambda column: group_order.index(groups[column]))  # stable within a group

    shown = table.assign(
        text=[
            "" if pd.isna(ours) else (f"{ours:.2f}\n±{std:.2f}" if runs > 1 else f"{ours:.2f}")
            for ours, std, runs in zip(table["ours"], table["std"], table["runs"])
        ],
        short=[
            NOT_AVAILABLE
            if note.startswith("not available")
            else ""
            if not pd.isna(ours)
            else DIVERGED
            if runs
            else MISSING  # a cell with runs but no value: they all diverged
            for note, ours, runs in zip(table["note"], table["ours"], table["runs"])
        ],
    )

    def grid(values: str) -> pd.DataFrame:  # rows x columns of one column of ``shown``
        return shown.pivot(index=layout.rows, columns=layout.columns, values=values).reindex(
            index=rows, columns=columns
        )

    values, annotations, notes = grid("ours"), grid("text"), grid("short")
    values.index = annotations.index = notes.index = [value_name(layout.rows, row) for row in rows]
    caption = "cell: mean over seeds ± their sample std" if (table["runs"] > 1).any() else ""
    return grouped_heatmap(values, annotations, notes, groups, title, metric_scale(layout.metric), caption)


def row_lines(layout: LinesReport, table: pd.DataFrame) -> dict[str, tuple[pd.DataFrame, list]]:
    """Row title -> (its cells, its lines): one row per model group of ``rows`` (a mapping), per value of the cell
    key ``rows`` names, or one row of every line."""
    if isinstance(layout.rows, dict):
        return {title: (table[table[layout.lines].isin(values)], values) for title, values in layout.rows.items()}
    if isinstance(layout.rows, str):
        return {
            value_name(layout.rows, value): (cells, list(dict.fromkeys(cells[layout.lines])))
            for value, cells in table.groupby(layout.rows, sort=False)
        }
    return {"": (table, list(dict.fromkeys(table[layout.lines])))}


def lines_figure(layout: LinesReport, table: pd.DataFrame, title: str) -> plt.Figure:
    return line_panels(
        table,
        x=layout.x,
        line=layout.lines,
        panel=layout.panels,
        row_lines=row_lines(layout, table),
        line_names=names(table, layout.lines),
        panel_names=names(table, layout.panels),
        title=title,
        y_label=metric_label(layout.metric),
        log_x=layout.log_x,
    )


def points_figure(layout: PointsReport, table: pd.DataFrame, title: str) -> plt.Figure:
    intervals = [confidence_interval(values, layout.confidence) for values in table["values"]]
    shown = table.assign(low=[low for low, _ in intervals], high=[high for _, high in intervals])
    return point_panels(
        shown,
        x=layout.x,
        panel=layout.panels,
        x_names=names(table, layout.x),
        panel_names=names(table, layout.panels),
        title=title,
        y_label=metric_label(layout.metric),
        interval=f"mean, {layout.confidence:.0%} t-interval over runs",
    )


def scaling_figure(layout: ScalingReport, table: pd.DataFrame, title: str) -> plt.Figure:
    """The metric against the parameter count, log-log, with each line's fitted power law."""
    lines = scaling_lines(table, layout.lines, layout.cells)
    return power_law_panel(
        lines,
        line_names=names(table, layout.lines),
        title=title,
        x_label="parameters",
        y_label=metric_label_with_split(layout.metric),
        count_name=short_count,
        line_key=layout.lines,
    )


def table_figure(layout, table: pd.DataFrame, title: str) -> plt.Figure | None:
    """A bar per cell with our value, and beside it the paper's where it prints numbers; rows by the paper's value,
    lowest first (cells it has no number for last), so that a bar out of step is an order the paper does not share.
    None when no cell has a value (every finished run diverged)."""
    shown = table.dropna(subset=["ours"]).sort_values("paper", na_position="last", kind="stable")
    if shown.empty:
        return None
    columns = {"ours": "ours"}
    if shown["paper"].notna().any():
        columns = {"the paper": "paper", "ours": "ours"}
    colour = colours("model", shown["model"]) if "model" in shown else None
    bar_colours = [colour[model] for model in shown["model"]] if colour else None
    return bar_panels(
        shown,
        names=cell_names(shown, layout.cells),
        columns=columns,
        title=title,
        x_label=metric_label(layout.metric),
        bar_colours=bar_colours,
    )


REPORT_FIGURES: dict[str, Callable] = {
    "buckets": bucket_figure,
    "heatmap": heatmap_figure,
    "lines": lines_figure,
    "points": points_figure,
    "scaling": scaling_figure,
    "speed": speed_figure,
    "table": table_figure,
}


def report_figure(artifact: Artifact, table: pd.DataFrame, title: str) -> plt.Figure | None:
    """The figure of the artifact's report kind from its cell table (None for a kind without one)."""
    layout = artifact.layout
    return REPORT_FIGURES[layout.kind](layout, table, title)
