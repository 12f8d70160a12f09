"""A table report's detail table: the metrics whose names start with ``report.detail.prefix`` (e.g. PALOMA's
perplexity per subdomain, ``paloma/domain/<source>/<subdomain>``), one row per such metric, one column per cell (the
mean over the cell's finished runs), written beside the report as ``<report>.detail.csv``; the page shows, for each
two values of ``report.detail.compare`` (e.g. two models) at the same other cell keys, in how many of the metrics
the first is better (lower for a selection of mode min), as the paper counts its domains ("xLSTM[1:0] has in 568
out of 571 (99.5%) text domains a lower perplexity than Mamba")."""

import itertools

import pandas as pd

from experiments.config.report_layouts import TableReport
from experiments.display import value_name

SUFFIX = ".detail.csv"


def detail_prefix(layout) -> str | None:
    return (getattr(layout, "detail", None) or {}).get("prefix") if isinstance(layout, TableReport) else None


def detail_frame(layout: TableReport, runs: pd.DataFrame) -> pd.DataFrame | None:
    """Metric name (the prefix removed) x cell: the mean over each cell's finished runs; None when no finished run
    records a metric of the prefix."""
    prefix = detail_prefix(layout)
    names = [column for column in runs.columns if prefix and column.startswith(prefix)]
    done = runs[runs["status"] == "done"]
    if not names or done.empty:
        return None
    means = done.groupby(layout.cells, sort=False)[names].mean()  # cells x metrics
    means.index = [
        " ".join(value_name(key, value) for key, value in zip(layout.cells, cell))
        for cell in (means.index if isinstance(means.index, pd.MultiIndex) else [(v,) for v in means.index])
    ]
    detail = means.T  # metrics x cells
    detail.index = [name.removeprefix(prefix) for name in detail.index]
    return detail.dropna(how="all")


def wins_markdown(layout: TableReport, runs: pd.DataFrame, mode: str) -> str:
    """Per two values of ``detail.compare`` at equal other cell keys: in how many detail metrics the first is better."""
    compare = layout.detail.get("compare", "model")
    done = runs[runs["status"] == "done"]
    prefix = detail_prefix(layout)
    names = [column for column in done.columns if column.startswith(prefix)]
    others = [key for key in layout.cells if key != compare]
    rows = []
    for group, cells in done.groupby(others, sort=False) if others else [((), done)]:
        means = cells.groupby(compare, sort=False)[names].mean()  # compare values x metrics
        for first, second in itertools.permutations(means.index, 2):
            both = means.loc[[first, second]].dropna(axis=1)
            better = (both.loc[first] < both.loc[second]) if mode == "min" else (both.loc[first] > both.loc[second])
            rows.append(
                {
                    **dict(zip(others, group if isinstance(group, tuple) else (group,))),
                    compare: value_name(compare, first),
                    "than": value_name(compare, second),
                    "better in": f"{int(better.sum())} of {both.shape[1]}",
                    "share": f"{better.mean():.1%}" if both.shape[1] else "",
                }
            )
    return pd.DataFrame(rows).to_markdown(index=False) if rows else "No two values to compare."


def detail_markdown(layout: TableReport, runs: pd.DataFrame, mode: str, csv_name: str) -> str:
    note = layout.detail.get("note")
    lines = [
        "## Detail",
        "",
        f"Every metric named `{detail_prefix(layout)}<name>`, per cell the mean over its finished runs: "
        f"[{csv_name}]({csv_name}) (one row per name). Per two values of `{layout.detail.get('compare', 'model')}`"
        f", the names in which the first is {'lower' if mode == 'min' else 'higher'} (better):",
        "",
        wins_markdown(layout, runs, mode),
        "",
    ]
    return "\n".join([*lines, *([note.strip(), ""] if note else [])])
