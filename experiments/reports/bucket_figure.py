"""The ``buckets`` report kind's figure (Figure lstmProblems, right): the metric per bucket of the scored tokens
(e.g. the test perplexity per training-frequency partition, rarest first), one line per model, the y axis
logarithmic, each model's whole-split value in its legend; beside it each line divided by the first one, bucket by
bucket (differences of a few percent vanish on an axis of several decades)."""

import numpy as np
import pandas as pd
from matplotlib import pyplot as plt

from experiments.config.report_layouts import BucketsReport
from experiments.display import metric_label, value_name
from experiments.reports.palette import colours, markers


def bucket_figure(layout: BucketsReport, table: pd.DataFrame, title: str) -> plt.Figure | None:
    """None when no cell has a value in any bucket (no finished run)."""
    metrics = layout.bucket_metrics()
    shown = table.dropna(subset=metrics, how="all")
    if shown.empty:
        return None
    positions = np.arange(len(layout.buckets))  # (K,)
    colour = colours(layout.lines, shown[layout.lines])
    marker = markers(layout.lines, shown[layout.lines])
    names = [" ".join(value_name(key, cell[key]) for key in layout.cells) for _, cell in shown.iterrows()]
    values = shown[metrics].to_numpy(dtype=float)  # (cells, K), NaN where the split has no token of the bucket
    figure, (absolute, relative) = plt.subplots(1, 2, figsize=(max(11.0, 3.0 + 1.4 * len(layout.buckets)), 3.8))
    for line, name, row, whole in zip(shown[layout.lines], names, values, shown["ours"]):
        absolute.plot(
            positions, row, marker=marker[line], color=colour[line], label=f"{name} (all tokens: {whole:.1f})"
        )
        relative.plot(positions, row / values[0], marker=marker[line], color=colour[line], label=name)
    absolute.set_yscale("log")
    absolute.set_ylabel(metric_label(layout.metric))
    relative.set_ylabel(f"{metric_label(layout.metric)} / {names[0]}'s")
    relative.axhline(1.0, color="grey", linewidth=1, linestyle="--")
    partition = layout.prefix.rstrip("/").rsplit("/", 1)[-1]
    for ax in (absolute, relative):
        ax.set_xticks(positions, layout.buckets, rotation=30, ha="right")
        ax.set_xlabel(f"{partition} partition of the tokens (bucket)")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=7)
    figure.suptitle(title, fontsize=9)
    figure.tight_layout()
    return figure
