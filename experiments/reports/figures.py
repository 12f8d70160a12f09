"""Figures in the paper's style (seaborn/matplotlib, no display needed)."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from experiments.display import MetricScale, label  # noqa: E402


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

