"""Figures in the paper's style (seaborn/matplotlib, no display needed)."""

import textwrap
from pathlib import Path
from typing import Callable

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.axis import Axis  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullLocator  # noqa: E402

from experiments.display import MetricScale, label  # noqa: E402
from experiments.reports.power_laws import ScalingLine, formula  # noqa: E402


def grouped_heatmap(values: pd.DataFrame, annotations: pd.DataFrame, notes: pd.DataFrame, column_groups: dict[str, str],
                    title: str, scale: MetricScale) -> plt.Figure:
    """Rows x columns heatmap over the metric's whole range (a diverging palette around its centre, if it has
    one); columns grouped (labels above, separators between groups).

    ``values``: rows x columns, NaN where there is no result; ``annotations``: the same shape, the text in cells
    with a result (e.g. the mean and its spread over seeds); ``notes``: the same shape, the text shown in cells
    without a result ("missing", "n/a"); ``column_groups``: column -> group, columns already in group order.
    """
    width = 2.4 + 0.75 * values.shape[1]
    height = 2.0 + 0.5 * values.shape[0]
    figure, axes = plt.subplots(figsize=(width, height))
    axes.set_facecolor("#e6e6e6")  # cells without a result
    palette = "RdBu" if scale.center is not None else "YlGnBu"
    sns.heatmap(values.astype(float), annot=annotations.fillna(""), fmt="", cmap=palette, vmin=scale.low, vmax=scale.high,
                linewidths=0.5, linecolor="white", cbar_kws={"label": scale.label}, ax=axes,
                annot_kws={"fontsize": 7 if annotations.fillna("").map(lambda text: "\n" in text).any().any() else 8})
    for row, column in zip(*values.isna().to_numpy().nonzero()):  # seaborn leaves cells without a value blank
        axes.text(column + 0.5, row + 0.5, notes.iat[row, column] or "", ha="center", va="center", fontsize=7,
                  color="#707070")
    axes.set_xticklabels([label(c) for c in values.columns], rotation=45, ha="right")
    axes.set_ylabel("")
    axes.set_xlabel("")
    groups = [column_groups[c] for c in values.columns]
    boundaries = [i for i in range(1, len(groups)) if groups[i] != groups[i - 1]]
    for boundary in boundaries:
        axes.axvline(boundary, color="black", linewidth=1.5)
    starts = [0, *boundaries]
    ends = [*boundaries, len(groups)]
    for start, end in zip(starts, ends):
        axes.text((start + end) / 2, -0.3, label(groups[start]), ha="center", va="bottom", fontsize=9,
                  fontweight="bold")
    axes.set_title(title, pad=28, fontsize=10)
    figure.tight_layout()
    return figure


def line_panels(data: pd.DataFrame, *, x: str, line: str, panel: str | None, row_lines: dict[str, tuple],
                line_names: dict, panel_names: dict, title: str, y_label: str, log_x: bool) -> plt.Figure:
    """The mean (``ours``) against ``x``, one line per value of ``line`` (named by ``line_names``), a band of
    ± ``std`` where a point combines several runs; one panel per value of ``panel`` (named by ``panel_names``)
    in each row; ``row_lines``: row title -> (the rows of ``data`` it shows, the line values it draws, in order)."""
    panel_values = list(dict.fromkeys(data[panel])) if panel else [None]
    figure, axes = plt.subplots(len(row_lines), len(panel_values), squeeze=False, sharex=True, sharey=True,
                                figsize=(1.5 + 3.2 * len(panel_values), 0.8 + 2.6 * len(row_lines)))
    colours = dict(zip(dict.fromkeys(data[line]), sns.color_palette("tab10", n_colors=data[line].nunique())))
    for row, (row_title, (row_data, line_values)) in enumerate(row_lines.items()):
        for column, panel_value in enumerate(panel_values):
            ax = axes[row, column]
            shown = row_data if panel is None else row_data[row_data[panel] == panel_value]
            for value in line_values:
                points = shown[shown[line] == value].dropna(subset=["ours"]).sort_values(x)
                if points.empty:
                    continue
                ax.plot(points[x], points["ours"], marker="o", color=colours[value], label=line_names[value])
                spread = points["runs"] > 1
                ax.fill_between(points[x], (points["ours"] - points["std"]).where(spread),
                                (points["ours"] + points["std"]).where(spread), color=colours[value], alpha=0.15)
            if log_x:
                ax.set_xscale("log")
            if row == 0 and panel is not None:
                ax.set_title(panel_names[panel_value], fontsize=9)
            if column == 0:
                ax.set_ylabel(f"{row_title}\n{y_label}" if row_title else y_label)
            if row == len(row_lines) - 1:
                ax.set_xlabel(label(x.rsplit(".", 1)[-1]))
        handles, labels = axes[row, -1].get_legend_handles_labels()
        if handles:
            axes[row, -1].legend(handles, labels, fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5))
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    return figure


def power_law_panel(lines: list[ScalingLine], *, line_names: dict, title: str, x_label: str, y_label: str,
                    count_name: Callable[[float], str]) -> plt.Figure:
    """Both axes logarithmic: each line's points as markers and its fitted power law as a dashed line of the same
    colour over the range of its points (gid ``fit:<line>``), the law in the legend; a line without a fit is its
    points, its legend entry saying so, as it says how many non-finite sizes a line left out (the page names them).
    ``count_name`` writes the x axis's values (parameter counts)."""
    figure, ax = plt.subplots(figsize=(9.5, 4.6))
    colours = sns.color_palette("tab10", n_colors=max(len(lines), 1))
    for colour, line in zip(colours, lines):
        points, name = line.points, line_names[line.line]
        sizes = len(points)
        shown = f"{name}: {formula(line.fit)}" if line.fit is not None else \
            f"{name}: no fit ({sizes} size{'' if sizes == 1 else 's'})"
        if line.left_out:
            shown += f", {len(line.left_out)} non-finite left out"
        ax.plot(points["parameters"], points["value"], marker="o", linestyle="none", color=colour, label=shown)
        if line.fit is not None:
            drawn = np.geomspace(points["parameters"].min(), points["parameters"].max(), 64)
            ax.plot(drawn, line.fit(drawn), linestyle="--", linewidth=1.2, color=colour, gid=f"fit:{line.line}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.margins(x=0.08, y=0.08)
    ax.autoscale_view()
    readable_log_axis(ax.xaxis, *ax.get_xlim(), count_name)
    readable_log_axis(ax.yaxis, *ax.get_ylim(), lambda value: f"{value:g}")
    ax.set_xlabel(x_label)
    ax.set_ylabel(y_label)
    ax.grid(which="both", alpha=0.25)
    if lines:
        ax.legend(fontsize=8, title=r"power law fit $a\,N^{b}$", title_fontsize=8, loc="center left",
                  bbox_to_anchor=(1.02, 0.5))
    ax.set_title(title, fontsize=10)
    figure.tight_layout()
    return figure


def readable_log_axis(axis: Axis, low: float, high: float, name: Callable[[float], str]) -> None:
    """Plain tick labels on a logarithmic axis from ``low`` to ``high`` (no 10^x): within a decade, about six evenly
    spaced ticks (a log axis over 200-240 has no decade tick to label); over up to two decades, each decade and its
    2 and 5; over more, each decade (the 2s and 5s of three decades crowd a panel's labels)."""
    if high / low < 10:
        axis.set_major_locator(MaxNLocator(nbins=6, steps=[1, 2, 2.5, 5, 10]))
        axis.set_minor_locator(NullLocator())
        axis.set_major_formatter(FuncFormatter(lambda value, _: name(value) if value > 0 else ""))
        return
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0) if high / low <= 100 else (1.0,)))
    axis.set_minor_locator(LogLocator(base=10, subs=tuple(range(2, 10))))
    axis.set_major_formatter(FuncFormatter(lambda value, _: name(value) if value > 0 else ""))
    axis.set_minor_formatter(FuncFormatter(lambda value, _: ""))


def point_panels(data: pd.DataFrame, *, x: str, panel: str | None, x_names: dict, panel_names: dict, title: str,
                 y_label: str, interval: str) -> plt.Figure:
    """One point per value of ``x`` at ``ours`` with error bars from ``low`` to ``high`` (the ``interval``, named
    in the axis label); one panel per value of ``panel``."""
    panel_values = list(dict.fromkeys(data[panel])) if panel else [None]
    figure, axes = plt.subplots(1, len(panel_values), squeeze=False, sharey=True,
                                figsize=(1.5 + 0.7 * data[x].nunique() * len(panel_values), 3.6))
    for column, panel_value in enumerate(panel_values):
        ax = axes[0, column]
        shown = data if panel is None else data[data[panel] == panel_value]
        positions = range(len(shown))
        ax.errorbar(positions, shown["ours"], yerr=[shown["ours"] - shown["low"], shown["high"] - shown["ours"]],
                    fmt="o", capsize=4, color="#1f4e79")
        ax.set_xticks(list(positions), [x_names[value] for value in shown[x]], rotation=45, ha="right")
        if panel is not None:
            ax.set_title(panel_names[panel_value], fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    axes[0, 0].set_ylabel(f"{y_label} ({interval})")
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    return figure


BAR_LABEL_WIDTH = 48  # characters of a bar's label per line
LOG_BARS_FROM = 10.0  # a panel whose largest value is this many times its smallest draws its bars on a log axis


def bar_panels(data: pd.DataFrame, *, names: list[str], columns: dict[str, str], title: str,
               x_label: str) -> plt.Figure:
    """Horizontal bars, a row per cell of ``data`` (named by ``names``, top to bottom in data's order) and a panel
    per entry of ``columns`` (panel title -> the column it draws), each panel on its own scale, the value written at
    each bar: the paper's numbers beside ours, in the same row order, so that the orders can be compared by eye. A
    panel whose positive values span LOG_BARS_FROM or more (a vanilla LSTM at 2418 beside xLSTM at 13.5) is drawn on a
    log axis, bars from a decade below its smallest value, so that the small values' differences show."""
    names = [textwrap.fill(name, BAR_LABEL_WIDTH) for name in names]  # a cell named by many keys takes lines
    row_height = 0.32 * max(1.0, 0.6 * max((name.count("\n") + 1 for name in names), default=1))  # rows are evenly spaced
    figure, axes = plt.subplots(1, len(columns), squeeze=False, sharey=True,
                                figsize=(1.5 + 3.2 * len(columns), 1.2 + row_height * len(data)))
    positions = list(range(len(data)))
    for column, (panel_title, values) in enumerate(columns.items()):
        ax = axes[0, column]
        shown = data[values].to_numpy(dtype=float)
        drawn = [value for value in shown if value == value] or [1.0]  # not NaN
        low, high = min(drawn), max(drawn)
        logarithmic = low > 0 and high / low >= LOG_BARS_FROM
        start = 10 ** np.floor(np.log10(low)) if logarithmic else 0.0
        ax.barh(positions, shown - start, left=start, color="#1f4e79" if column else "#999999")
        for position, value in zip(positions, shown):
            if value == value:
                ax.text(value, position, f" {value:.4g}", va="center", fontsize=7)
        ax.set_title(panel_title, fontsize=9)
        ax.set_xlabel(x_label + (" (log scale)" if logarithmic else ""))
        if logarithmic:
            ax.set_xscale("log")
            ax.set_xlim(start, high * 3)
            readable_log_axis(ax.xaxis, start, high * 3, lambda value: f"{value:g}")
        else:
            ax.set_xlim(0, 1.25 * high)
        ax.grid(axis="x", alpha=0.3)
    axes[0, 0].set_yticks(positions, names)
    axes[0, 0].invert_yaxis()
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    return figure


# No creation date in the files: the same report gives the same bytes (committed figures change only with results).
FIXED_METADATA = {".png": {}, ".pdf": {"CreationDate": None}}


def save(figure: plt.Figure, stem: Path) -> list[Path]:
    """Write ``stem``.png and ``stem``.pdf and close the figure."""
    written = []
    for suffix in (".png", ".pdf"):
        figure.savefig(stem.with_suffix(suffix), dpi=150, bbox_inches="tight", metadata=FIXED_METADATA[suffix])
        written.append(stem.with_suffix(suffix))
    plt.close(figure)
    return written

