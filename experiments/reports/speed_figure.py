"""The ``speed`` report kind's figure (Figures inference_time_generation, inference_time_decoding_throughput and
spaj300B_seq_extrapolation with its measured memory): each metric in a panel against the swept length or batch size,
log-log, one line per model with its growth exponent, the cells that ran out of memory marked OOM at their x.

The growth exponent k of a line (metric ~ x^k) is the least-squares slope in log-log space over the upper half of
its x values (where the term that grows fastest dominates): a generation time with k near 1 grows linearly in the
length, one near 2 quadratically."""

import math

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib import pyplot as plt
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from experiments.config.report_layouts import SpeedReport
from experiments.display import label, metric_label, value_name
from experiments.reports.figures import readable_log_axis

OUT_OF_MEMORY_MARK = "OOM"


def growth_exponent(x: pd.Series, values: pd.Series) -> float:
    """The slope of log(values) against log(x) over the upper half of the x values (NaN for fewer than two)."""
    points = pd.DataFrame({"x": x, "y": values}).query("x > 0 and y > 0").sort_values("x")
    upper = points[points["x"] >= points["x"].iloc[len(points) // 2]] if len(points) >= 4 else points
    if upper["x"].nunique() < 2:
        return math.nan
    slope, _ = np.polyfit(np.log(upper["x"]), np.log(upper["y"]), 1)
    return float(slope)


def out_of_memory_cells(layout: SpeedReport, table: pd.DataFrame) -> pd.Series:
    """Whether each cell's runs ran out of memory (the mean of the layout's out_of_memory metric at least 1/2)."""
    if layout.out_of_memory is None:
        return pd.Series(False, index=table.index)
    return table[layout.out_of_memory].fillna(0) >= 0.5


def speed_figure(layout: SpeedReport, table: pd.DataFrame, title: str) -> plt.Figure:
    metrics = [layout.metric, *layout.more_metrics]
    values = table.rename(columns={"ours": layout.metric}) if layout.metric not in table else table
    oom = out_of_memory_cells(layout, table)
    line_values = list(dict.fromkeys(table[layout.lines]))
    colours = dict(zip(line_values, sns.color_palette("tab10", n_colors=len(line_values))))
    figure, axes = plt.subplots(1, len(metrics), squeeze=False, figsize=(1.5 + 3.6 * len(metrics), 4.4))
    for ax, metric in zip(axes[0], metrics):
        marked = oom if metric == layout.metric else pd.Series(False, index=table.index)
        for line_index, value in enumerate(line_values):
            mine = values[table[layout.lines] == value]
            points = mine[~marked[mine.index]].dropna(subset=[metric]).sort_values(layout.x)
            name = value_name(layout.lines, value)
            if not points.empty:
                k = growth_exponent(points[layout.x], points[metric])
                shown = name if math.isnan(k) else f"{name} (k={round(k, 2) + 0.0:.2f})"  # + 0.0: no "-0.00"
                ax.plot(points[layout.x], points[metric], marker="o", color=colours[value], label=shown)
            for index, x in enumerate(sorted(mine[marked[mine.index]][layout.x])):  # near the top, a row per line
                ax.plot(x, 0.96 - 0.05 * line_index, marker="X", markersize=8, color=colours[value],
                        transform=ax.get_xaxis_transform(), clip_on=False,
                        label=f"{name}: {OUT_OF_MEMORY_MARK}" if index == 0 else None)
        if metric in layout.limits:
            for limit in table[layout.limits[metric]].dropna().unique():
                ax.axhline(limit, color="grey", linestyle="--", linewidth=1, label=f"limit {limit:g}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.xaxis.set_major_locator(FixedLocator(sorted(table[layout.x].dropna().unique())))  # ticks at the swept x
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        readable_log_axis(ax.yaxis, *ax.get_ylim(), lambda value: f"{value:g}")
        ax.set_xlabel(label(layout.x.rsplit(".", 1)[-1]))
        ax.set_ylabel(metric_label(metric))
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)  # below: no line hidden
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    return figure
