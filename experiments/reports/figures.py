"""Figures in the paper's style (seaborn/matplotlib, no display needed)."""

import math
import textwrap
from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.axis import Axis
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullLocator

from experiments.display import MetricScale, label
from experiments.reports.palette import colours, marker_size, markers
from experiments.reports.power_laws import ScalingLine, formula


def grouped_heatmap(
    values: pd.DataFrame,
    annotations: pd.DataFrame,
    notes: pd.DataFrame,
    column_groups: dict[str, str],
    title: str,
    scale: MetricScale,
    caption: str = "",
) -> plt.Figure:
    """Rows x columns heatmap over the metric's whole range (a diverging palette around its centre, if it has
    one); columns grouped (labels above, separators between groups).

    ``values``: rows x columns, NaN where there is no result; ``annotations``: the same shape, the text in cells
    with a result (e.g. the mean and its spread over seeds); ``notes``: the same shape, the text shown in cells
    without a result ("missing", "n/a"); ``column_groups``: column -> group, columns already in group order;
    ``caption``: what the cells' text means, under the columns.
    """
    width = 2.4 + 0.75 * values.shape[1]
    height = 2.0 + 0.5 * values.shape[0]
    figure, axes = plt.subplots(figsize=(width, height))
    axes.set_facecolor("#e6e6e6")  # cells without a result
    palette = "RdBu" if scale.center is not None else "YlGnBu"
    sns.heatmap(
        values.astype(float),
        annot=annotations.fillna(""),
        fmt="",
        cmap=palette,
        vmin=scale.low,
        vmax=scale.high,
        linewidths=0.5,
        linecolor="white",
        cbar_kws={"label": scale.label},
        ax=axes,
        annot_kws={"fontsize": 7 if annotations.fillna("").map(lambda text: "\n" in text).any().any() else 8},
    )
    for row, column in zip(*values.isna().to_numpy().nonzero()):  # seaborn leaves cells without a value blank
        axes.text(
            column + 0.5, row + 0.5, notes.iat[row, column] or "", ha="center", va="center", fontsize=7, color="#707070"
        )
    axes.set_xticklabels([label(c) for c in values.columns], rotation=45, ha="right")
    axes.set_ylabel("")
    axes.set_xlabel(caption, fontsize=8)
    groups = [column_groups[c] for c in values.columns]
    boundaries = [i for i in range(1, len(groups)) if groups[i] != groups[i - 1]]
    for boundary in boundaries:
        axes.axvline(boundary, color="black", linewidth=1.5)
    starts = [0, *boundaries]
    ends = [*boundaries, len(groups)]
    for start, end in zip(starts, ends):
        axes.text(
            (start + end) / 2, -0.3, label(groups[start]), ha="center", va="bottom", fontsize=9, fontweight="bold"
        )
    axes.set_title(title, pad=28, fontsize=10)
    figure.tight_layout()
    return figure


SPREAD_LABEL = "band: ± sample std over seeds"


def line_panels(
    data: pd.DataFrame,
    *,
    x: str,
    line: str,
    panel: str | None,
    row_lines: dict[str, tuple],
    line_names: dict,
    panel_names: dict,
    title: str,
    y_label: str,
    log_x: bool,
) -> plt.Figure:
    """The mean (``ours``) against ``x``, one line per value of ``line`` (named by ``line_names``; a model in its
    colour and marker of every figure), a band of ± the sample ``std`` where a point combines several runs (said in
    the legend); one panel per value of ``panel`` (named by ``panel_names``) in each row; ``row_lines``: row title ->
    (the rows of ``data`` it shows, the line values it draws, in order); a row without a value is left out. The x
    ticks are the x values with a point."""
    row_lines = {
        title_: (rows, values) for title_, (rows, values) in row_lines.items() if rows.dropna(subset=["ours"]).shape[0]
    } or row_lines
    panel_values = list(dict.fromkeys(data[panel])) if panel else [None]
    figure, axes = plt.subplots(
        len(row_lines),
        len(panel_values),
        squeeze=False,
        sharex=True,
        sharey=True,
        figsize=(1.5 + 3.2 * len(panel_values), 0.8 + 2.6 * len(row_lines)),
    )
    colour, marker = colours(line, data[line]), markers(line, data[line])
    ticks = sorted(data.dropna(subset=["ours"])[x].unique())
    for row, (row_title, (row_data, line_values)) in enumerate(row_lines.items()):
        for column, panel_value in enumerate(panel_values):
            ax = axes[row, column]
            shown = row_data if panel is None else row_data[row_data[panel] == panel_value]
            drawn = 0
            for value in line_values:
                points = shown[shown[line] == value].dropna(subset=["ours"]).sort_values(x)
                if points.empty:
                    continue
                ax.plot(
                    points[x],
                    points["ours"],
                    marker=marker[value],
                    markersize=marker_size(drawn),
                    color=colour[value],
                    label=line_names[value],
                    zorder=2 + drawn,
                )
                drawn += 1
                spread = points["runs"] > 1
                if spread.any():
                    ax.fill_between(
                        points[x],
                        (points["ours"] - points["std"]).where(spread),
                        (points["ours"] + points["std"]).where(spread),
                        color=colour[value],
                        alpha=0.15,
                    )
            if log_x:
                ax.set_xscale("log")
            if ticks:
                ax.xaxis.set_major_locator(FixedLocator(ticks))
                ax.xaxis.set_minor_locator(NullLocator())
                ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
            if row == 0 and panel is not None:
                ax.set_title(panel_names[panel_value], fontsize=9)
            if column == 0:
                ax.set_ylabel(f"{row_title}\n{y_label}" if row_title else y_label)
            if row == len(row_lines) - 1:
                ax.set_xlabel(label(x.rsplit(".", 1)[-1]))
        handles, labels = axes[row, -1].get_legend_handles_labels()
        if handles:
            if (row_data["runs"] > 1).any():
                handles.append(Patch(color="grey", alpha=0.3))
                labels.append(SPREAD_LABEL)
            axes[row, -1].legend(handles, labels, fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5))
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    return figure


def power_law_panel(
    lines: list[ScalingLine],
    *,
    line_names: dict,
    title: str,
    x_label: str,
    y_label: str,
    count_name: Callable[[float], str],
    line_key: str | None = "model",
) -> plt.Figure:
    """Both axes logarithmic: each line's points as markers and its fitted power law as a dashed line of the same
    colour over the range of its points (gid ``fit:<line>``), the law in the legend; a line without a fit is its
    points, its legend entry saying so, as it says how many non-finite sizes a line left out (the page names them).
    ``count_name`` writes the x axis's values (parameter counts); ``line_key``: the cell key of the lines (a model's
    colour and marker are its own in every figure)."""
    figure, ax = plt.subplots(figsize=(9.5, 4.6))
    colour_of, marker_of = (
        colours(line_key, [line.line for line in lines]),
        markers(line_key, [line.line for line in lines]),
    )
    for line in lines:
        colour = colour_of[line.line]
        points, name = line.points, line_names[line.line]
        sizes = len(points)
        shown = (
            f"{name}: {formula(line.fit)}"
            if line.fit is not None
            else f"{name}: no fit ({sizes} size{'' if sizes == 1 else 's'})"
        )
        if line.left_out:
            shown += f", {len(line.left_out)} non-finite left out"
        ax.plot(
            points["parameters"],
            points["value"],
            marker=marker_of[line.line],
            linestyle="none",
            color=colour,
            label=shown,
        )
        if line.fit is not None:
            drawn = np.geomspace(points["parameters"].min(), points["parameters"].max(), 64)
            ax.plot(drawn, line.fit(drawn), linestyle="--", linewidth=1.2, color=colour, gid=f"fit:{line.line}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.margins(x=0.08, y=0.08)
    ax.autoscale_view()
    readable_log_axis(ax.xaxis, *ax.get_xlim(), count_name)
    values = [value for line in lines for value in line.points["value"]]
    if values:  # the y axis ends on round ticks around every point
        ticks = nice_log_ticks(min(values), max(values), cover=True)
        ax.set_ylim(ticks[0] / 1.02, ticks[-1] * 1.02)
    readable_log_axis(ax.yaxis, *ax.get_ylim(), lambda value: f"{value:g}")
    ax.set_xlabel(x_label)
    ax.set_ylabel(y_label)
    ax.grid(which="both", alpha=0.25)
    if lines:
        ax.legend(
            fontsize=8,
            title=r"power law fit $a\,N^{b}$",
            title_fontsize=8,
            loc="center left",
            bbox_to_anchor=(1.02, 0.5),
        )
    ax.set_title(title, fontsize=10)
    figure.tight_layout()
    return figure


TICK_MANTISSAS = (  # per decade, densest first
    (1, 1.2, 1.4, 1.6, 1.8, 2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 9),
    (1, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8),
    (1, 1.5, 2, 3, 4, 5, 7),
    (1, 2, 3, 5),
    (1, 2, 5),
    (1, 3),
    (1,),
)


NARROW_SPAN = 1.6  # an axis from low to below this many times low is ticked as if linear


def nice_log_ticks(low: float, high: float, most: int = 8, cover: bool = False) -> list[float]:
    """Plain round ticks from ``low`` to ``high`` on a logarithmic axis, as dense as ``most`` ticks allow, so that
    every value lies near one (a line at 158 on an axis from 150 to 360 is read off a tick at 160): the densest
    mantissas of TICK_MANTISSAS in each decade that give at most ``most``, or every n-th decade. ``cover``: with the
    round tick just below ``low`` and just above ``high`` too, for an axis that ends on ticks."""
    if high / low < NARROW_SPAN:  # within a fraction of a decade: evenly spaced round numbers
        ticks = [float(tick) for tick in MaxNLocator(nbins=most - 2, steps=[1, 2, 2.5, 5, 10]).tick_values(low, high)]
        if cover:
            return ticks
        return [tick for tick in ticks if low <= tick <= high]
    decades = range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 2)
    for mantissas in TICK_MANTISSAS:
        candidates = sorted({round(mantissa * 10.0**decade, 12) for decade in decades for mantissa in mantissas})
        if cover:
            below = [tick for tick in candidates if tick <= low]
            above = [tick for tick in candidates if tick >= high]
            low, high = (below[-1] if below else low), (above[0] if above else high)
        ticks = [tick for tick in candidates if low <= tick <= high]
        if len(ticks) <= most:
            return ticks
    every = math.ceil(len(ticks) / most)
    return ticks[::every]


def readable_log_axis(axis: Axis, low: float, high: float, name: Callable[[float], str]) -> None:
    """Plain tick labels on a logarithmic axis from ``low`` to ``high`` (no 10^x), at nice_log_ticks, no minor
    ticks."""
    axis.set_major_locator(FixedLocator(nice_log_ticks(low, high)))
    axis.set_minor_locator(NullLocator())
    axis.set_major_formatter(FuncFormatter(lambda value, _: name(value) if value > 0 else ""))


def point_panels(
    data: pd.DataFrame,
    *,
    x: str,
    panel: str | None,
    x_names: dict,
    panel_names: dict,
    title: str,
    y_label: str,
    interval: str,
) -> plt.Figure:
    """One point per value of ``x`` at ``ours`` (a model in its colour and marker of every figure) with error bars
    from ``low`` to ``high`` (the ``interval``, named in the axis label), each run beside it as a small dot; one panel
    per value of ``panel``."""
    panel_values = list(dict.fromkeys(data[panel])) if panel else [None]
    figure, axes = plt.subplots(
        1,
        len(panel_values),
        squeeze=False,
        sharey=True,
        figsize=(1.5 + 0.8 * data[x].nunique() * len(panel_values), 3.8),
    )
    colour, marker = colours(x, data[x]), markers(x, data[x])
    for column, panel_value in enumerate(panel_values):
        ax = axes[0, column]
        shown = data if panel is None else data[data[panel] == panel_value]
        for position, (_, cell) in enumerate(shown.iterrows()):
            ax.errorbar(
                [position],
                [cell["ours"]],
                yerr=[[cell["ours"] - cell["low"]], [cell["high"] - cell["ours"]]],
                fmt=marker[cell[x]],
                capsize=4,
                color=colour[cell[x]],
            )
            runs = list(cell["values"]) if "values" in cell.index and isinstance(cell["values"], tuple) else []
            ax.plot(
                [position + 0.18] * len(runs),
                runs,
                linestyle="none",
                marker=".",
                markersize=4,
                color=colour[cell[x]],
                alpha=0.7,
            )
        ax.set_xticks(range(len(shown)), [x_names[value] for value in shown[x]], rotation=45, ha="right")
        if panel is not None:
            ax.set_title(panel_names[panel_value], fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    axes[0, 0].set_ylabel(y_label)
    for ax in axes[0]:
        ax.set_xlabel(f"{interval}; dots: the runs", fontsize=8)
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    return figure


BAR_LABEL_WIDTH = 48  # characters of a bar's label per line
LOG_BARS_FROM = 10.0  # a panel whose largest value is this many times its smallest draws its bars on a log axis


def bar_panels(
    data: pd.DataFrame,
    *,
    names: list[str],
    columns: dict[str, str],
    title: str,
    x_label: str,
    bar_colours: list | None = None,
) -> plt.Figure:
    """Horizontal bars, a row per cell of ``data`` (named by ``names``, top to bottom in data's order; coloured by
    ``bar_colours``, a model's colour of every figure, lighter in the paper's panel) and a panel per entry of
    ``columns`` (panel title -> the column it draws), every panel on one and the same scale, the value written at each
    bar: the paper's numbers beside ours, in the same row order and on the same axis. Where the positive values span
    LOG_BARS_FROM or more (a vanilla LSTM at 2418 beside xLSTM at 13.5, or the paper's 13.4 beside our 220) the axis
    is logarithmic, bars from the round tick below the smallest value."""
    names = [textwrap.fill(name, BAR_LABEL_WIDTH) for name in names]  # a cell named by many keys takes lines
    row_height = 0.32 * max(
        1.0, 0.6 * max((name.count("\n") + 1 for name in names), default=1)
    )  # rows are evenly spaced
    figure, axes = plt.subplots(
        1,
        len(columns),
        squeeze=False,
        sharey=True,
        sharex=True,
        figsize=(1.5 + 3.2 * len(columns), 1.2 + row_height * len(data)),
    )
    positions = list(range(len(data)))
    every = [value for values in columns.values() for value in data[values].to_numpy(dtype=float) if value == value]
    low, high = (min(every), max(every)) if every else (1.0, 1.0)
    logarithmic = low > 0 and high / low >= LOG_BARS_FROM
    ticks = nice_log_ticks(low, high * 3, most=5, cover=True) if logarithmic else []
    start = ticks[0] if logarithmic else 0.0
    bar_colours = bar_colours or ["#1f4e79"] * len(data)
    for column, (panel_title, values) in enumerate(columns.items()):
        ax = axes[0, column]
        shown = data[values].to_numpy(dtype=float)
        paper = column == 0 and len(columns) > 1
        ax.barh(
            positions,
            shown - start,
            left=start,
            color=bar_colours,
            alpha=0.45 if paper else 1.0,
            hatch="//" if paper else None,
            edgecolor="white",
        )
        for position, value in zip(positions, shown):
            if value == value:
                ax.text(value, position, f" {value:.4g}", va="center", fontsize=7)
        ax.set_title(panel_title, fontsize=9)
        ax.set_xlabel(x_label + (" (log scale)" if logarithmic else ""))
        if logarithmic:
            ax.set_xscale("log")
            ax.set_xlim(start, ticks[-1])
            ax.xaxis.set_major_locator(FixedLocator(ticks))
            ax.xaxis.set_minor_locator(NullLocator())
            ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        else:
            ax.set_xlim(0, 1.25 * high)
        ax.grid(axis="x", alpha=0.3)
    axes[0, 0].set_yticks(positions, names)
    axes[0, 0].invert_yaxis()
    figure.suptitle(
        title + ("\nthe paper's numbers (hatched) and ours on one axis" if len(columns) > 1 else ""), fontsize=10
    )
    figure.tight_layout()
    return figure


# No creation date in the files: the same report gives the same bytes (committed figures change only with results).
FIXED_METADATA = {".png": {}, ".pdf": {"CreationDate": None}}


def save(figure: plt.Figure, stem: Path) -> list[Path]:
    """Write ``stem``.png and ``stem``.pdf (appended: a stem "x.curves" gives x.curves.png) and close the figure."""
    written = []
    for suffix in (".png", ".pdf"):
        path = stem.with_name(stem.name + suffix)
        figure.savefig(path, dpi=150, bbox_inches="tight", metadata=FIXED_METADATA[suffix])
        written.append(path)
    plt.close(figure)
    return written
