"""The ``buckets`` report kind's figure (Figure lstmProblems, right): the metric per bucket of the scored tokens
(e.g. the test perplexity per training-frequency partition, rarest first), one line per model, the y axis
logarithmic, each model's whole-split value in its legend."""

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib import pyplot as plt

from experiments.config.report_layouts import BucketsReport
from experiments.display import metric_label, value_name


def bucket_figure(layout: BucketsReport, table: pd.DataFrame, title: str) -> plt.Figure | None:
    """None when no cell has a value in any bucket (no finished run)."""
    metrics = layout.bucket_metrics()
    shown = table.dropna(subset=metrics, how="all")
    if shown.empty:
        return None
    positions = np.arange(len(layout.buckets))  # (K,)
    colours = sns.color_palette("tab10", n_colors=len(shown))
    figure, ax = plt.subplots(figsize=(max(7.0, 1.5 + 0.8 * len(layout.buckets)), 3.8))
    for colour, (_, cell) in zip(colours, shown.iterrows()):
        values = cell[metrics].to_numpy(dtype=float)  # (K,), NaN where the split has no token of the bucket
        name = " ".join(value_name(key, cell[key]) for key in layout.cells)
        ax.plot(positions, values, marker="o", color=colour, label=f"{name} (all tokens: {cell['ours']:.1f})")
    ax.set_xticks(positions, layout.buckets)
    ax.set_xlabel(f"{layout.prefix.rstrip('/').rsplit('/', 1)[-1]} partition of the tokens (bucket)")
    ax.set_yscale("log")
    ax.set_ylabel(metric_label(layout.metric))
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7)
    figure.suptitle(title, fontsize=9)
    figure.tight_layout()
    return figure
