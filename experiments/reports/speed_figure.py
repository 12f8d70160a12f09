"""The ``speed`` report kind's figure (Figures inference_time_generation, inference_time_decoding_throughput and
spaj300B_seq_extrapolation with its measured memory): each metric in a panel against the swept length or batch size,
x logarithmic, one line per model (its colour and marker in every figure: experiments.reports.palette) with its
growth exponent k in the legend, whose title says what k is.

A cell that ran out of memory was not run: its model's mark sits in a strip above the panel at its x, never among the
measured points, and a value recorded for it (the memory estimated before the run) is drawn hollow on a dotted line,
an estimate, never as a measurement. The y axis is logarithmic where a panel's values span four times or more, with
round ticks near every line (experiments.reports.figures.nice_log_ticks); the x ticks are the x values measured.

The growth exponent k of a line (metric ~ x^k) is the least-squares slope in log-log space over the upper half of
its x values (experiments.reports.statements.growth_exponent): a generation time with k near 1 grows linearly in the
length, one near 2 quadratically."""

import math

import pandas as pd
from matplotlib import pyplot as plt
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullLocator

from experiments.config.report_layouts import SpeedReport
from experiments.display import label, metric_label, value_name
from experiments.reports.figures import nice_log_ticks, readable_log_axis
from experiments.reports.palette import colours, marker_size, markers
from experiments.reports.statements import growth_exponent, signed

OUT_OF_MEMORY_MARK = "OOM"
LOG_FROM = 4.0  # a panel whose largest value is this many times its smallest has a logarithmic y axis
K_TITLE = "k: growth exponent, value ~ x^k\n(upper half of the x values)"


def out_of_memory_cells(layout: SpeedReport, table: pd.DataFrame) -> pd.Series:
    """Whether each cell's runs ran out of memory (the mean of the layout's out_of_memory metric at least 1/2)."""
    if layout.out_of_memory is None or layout.out_of_memory not in table:
        return pd.Series(False, index=table.index)
    return table[layout.out_of_memory].fillna(0) >= 0.5


def y_axis(ax: plt.Axes, values: list[float]) -> None:
    """Logarithmic with round ticks where the values span LOG_FROM times or more, else linear."""
    positive = [value for value in values if value > 0 and math.isfinite(value)]
    if positive and max(positive) / min(positive) >= LOG_FROM:
        ax.set_yscale("log")
        ticks = nice_log_ticks(min(positive), max(positive), cover=True)  # the axis ends on ticks around the data
        ax.set_ylim(ticks[0] / 1.08, ticks[-1] * 1.08)
        readable_log_axis(ax.yaxis, ticks[0], ticks[-1], lambda value: f"{value:g}")
    else:
        ax.yaxis.set_major_locator(MaxNLocator(nbins=7))


def out_of_memory_strip(strip: plt.Axes, marks: dict, colour: dict, names: dict) -> None:
    """The strip above a panel: a row per model that ran out of memory, its mark at each x it did."""
    for row, (line, xs) in enumerate(marks.items()):
        strip.plot(
            xs, [row] * len(xs), linestyle="none", marker="x", markersize=7, markeredgewidth=2, color=colour[line]
        )
    strip.set_ylim(-0.7, len(marks) - 0.3)
    strip.set_yticks(range(len(marks)), [names[line] for line in marks], fontsize=6)
    strip.tick_params(axis="x", labelbottom=False, length=0)
    strip.set_title(f"{OUT_OF_MEMORY_MARK}: out of memory, not run", fontsize=7, pad=2)
    strip.grid(axis="x", alpha=0.3)


def speed_figure(layout: SpeedReport, table: pd.DataFrame, title: str) -> plt.Figure:
    metrics = [layout.metric, *layout.more_metrics]
    values = table.rename(columns={"ours": layout.metric}) if layout.metric not in table else table
    oom = out_of_memory_cells(layout, table)
    line_values = list(dict.fromkeys(table[layout.lines]))
    colour, marker = colours(layout.lines, line_values), markers(layout.lines, line_values)
    names = {value: value_name(layout.lines, value) for value in line_values}
    marks = {value: sorted(values[(table[layout.lines] == value) & oom][layout.x]) for value in line_values}
    marks = {value: xs for value, xs in marks.items() if xs}
    strip_height = 0.35 + 0.16 * len(marks) if marks else 0.01
    figure, axes = plt.subplots(
        2,
        len(metrics),
        squeeze=False,
        sharex="col",
        layout="constrained",
        figsize=(1.5 + 3.8 * len(metrics), 5.0 + strip_height),
        height_ratios=[strip_height, 3.6],
    )
    for strip, ax, metric in zip(axes[0], axes[1], metrics):
        drawn, ticked_x, estimated_any = [], set(), False
        for order, value in enumerate(line_values):
            mine = values[table[layout.lines] == value]
            points = mine[~oom[mine.index]].dropna(subset=[metric]).sort_values(layout.x)
            style = dict(color=colour[value], marker=marker[value], markersize=marker_size(order), zorder=2 + order)
            if not points.empty:
                k = growth_exponent(points[layout.x], points[metric])
                shown = names[value] if math.isnan(k) else f"{names[value]} (k {signed(k)})"
                ax.plot(points[layout.x], points[metric], label=shown, **style)
                drawn += list(points[metric])
                ticked_x |= set(points[layout.x])
            estimated = mine[oom[mine.index]].dropna(subset=[metric]).sort_values(layout.x)
            if metric != layout.metric and not estimated.empty:  # recorded before a run that did not run
                joined = pd.concat([points.tail(1), estimated])
                ax.plot(joined[layout.x], joined[metric], linestyle=":", color=colour[value], zorder=1)
                ax.plot(
                    estimated[layout.x],
                    estimated[metric],
                    linestyle="none",
                    marker=marker[value],
                    markersize=marker_size(order),
                    markerfacecolor="white",
                    markeredgecolor=colour[value],
                    zorder=2 + order,
                )
                drawn += list(estimated[metric])
                ticked_x |= set(estimated[layout.x])
                estimated_any = True
        if metric in layout.limits:
            for limit in table[layout.limits[metric]].dropna().unique():
                ax.axhline(limit, color="grey", linestyle="--", linewidth=1, label=f"limit {limit:g}")
                drawn.append(limit)
        if metric == layout.metric and marks:
            out_of_memory_strip(strip, marks, colour, names)
            ticked_x |= {x for xs in marks.values() for x in xs}
        else:
            strip.set_visible(False)
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(FixedLocator(sorted(ticked_x)))  # ticks at the x values drawn
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        if ticked_x:
            ax.set_xlim(min(ticked_x) / 1.3, max(ticked_x) * 1.3)
        y_axis(ax, drawn)
        ax.set_xlabel(label(layout.x.rsplit(".", 1)[-1]))
        ax.set_ylabel(metric_label(metric))
        ax.grid(True, which="major", alpha=0.3)
        handles, labels = ax.get_legend_handles_labels()
        if estimated_any:
            handles.append(Line2D([], [], linestyle=":", marker="o", color="grey", markerfacecolor="white"))
            labels.append("estimate before a run over the limit (not run)")
        ax.legend(
            handles,
            labels,
            fontsize=7,
            loc="upper center",
            bbox_to_anchor=(0.5, -0.16),
            ncol=2,
            title=K_TITLE,
            title_fontsize=7,
        )  # below the panel and its x label: no line hidden
    figure.suptitle(title, fontsize=10)
    return figure
