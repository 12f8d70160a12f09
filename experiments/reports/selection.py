"""The paper's selection rule: per reported cell, pick the hyperparameter value that is best on validation."""

from collections.abc import Sequence
from typing import Any

import pandas as pd

MERGED = "merged {}"  # the column that keeps a merged key's own value (``chosen merged model`` in the cell table)


def merged_runs(
    runs: pd.DataFrame, merge: dict[str, dict[Any, list]], cells: list[str]
) -> tuple[pd.DataFrame, list[str]]:
    """The runs with several values of a cell key reported as one row, and the columns to choose among them.

    ``merge`` maps a cell key to reported value -> the values it merges, e.g. ``{"model": {"best": ["a", "b"]}}``:
    the runs of ``a`` and ``b`` become one cell ``best`` and the selection chooses between them by its metric, as it
    chooses a learning rate (each member's own value stays in the column ``merged model``). ValueError naming the
    problem for a key that is not a cell or a value merged twice."""
    chosen_too = []
    for key, rows in (merge or {}).items():
        if key not in cells:
            raise ValueError(f"selection.merge.{key}: {key!r} is not one of the report's cells {cells}")
        if not isinstance(rows, dict) or not all(isinstance(members, list) and members for members in rows.values()):
            raise ValueError(
                f"selection.merge.{key}={rows!r} must map each reported value to a non-empty list of {key} values"
            )
        row_of = {}
        for row, members in rows.items():
            for member in members:
                if member in row_of:
                    raise ValueError(
                        f"selection.merge.{key}: {member!r} is merged into both {row_of[member]!r} and {row!r}"
                    )
                row_of[member] = row
        runs = runs.assign(**{MERGED.format(key): runs[key]})
        runs[key] = runs[key].map(lambda value: row_of.get(value, value))  # noqa: B023 (mapped in this iteration)
        chosen_too.append(MERGED.format(key))
    return runs, chosen_too


def select_cells(
    runs: pd.DataFrame,
    *,
    cells: list[str],
    choose: list[str],
    average: list[str],
    select_metric: str,
    mode: str,
    report_metric: str,
    solved_at: float | None = None,
    cell_metrics: Sequence[str] = (),
) -> pd.DataFrame:
    """One row per cell (the ``cells`` keys) from one row per finished run.

    For each cell, every combination of the ``choose`` keys (e.g. the learning rate) is scored by its
    ``select_metric`` averaged over the ``average`` keys (e.g. seeds); the best one (``mode`` max or min) is
    chosen, and the cell reports the mean of ``report_metric`` over the chosen combination's runs, their spread
    (the sample standard deviation, ddof 1; min and max), how many runs it combines and, with ``solved_at``, how many of them reach it;
    ``values`` holds the chosen runs' own values (ascending), for judgements per run such as the paper's findings;
    each of ``cell_metrics`` (e.g. the parameter count a scaling figure places the cell by) is the mean over the chosen
    runs. A combination whose score is NaN (its runs diverged) is chosen only when every one of the cell's is.
    """
    if mode not in ("max", "min"):
        raise ValueError(f"selection mode {mode!r} is not valid; valid choices: ['max', 'min']")
    rows = []
    for cell_values, cell_runs in runs.groupby(cells, sort=False, dropna=False):
        cell_values = cell_values if isinstance(cell_values, tuple) else (cell_values,)
        if choose:
            scores = cell_runs.groupby(choose, dropna=False)[select_metric].mean()
            scored = scores.dropna()  # a diverged run's NaN loses to any value; a cell of diverged runs takes the first
            best = (scored.idxmax() if mode == "max" else scored.idxmin()) if len(scored) else scores.index[0]
            best = best if isinstance(best, tuple) else (best,)
            chosen = cell_runs
            for key, value in zip(choose, best):
                chosen = chosen[chosen[key] == value]
        else:
            best, chosen = (), cell_runs
        rows.append(
            {
                **dict(zip(cells, cell_values)),
                **{f"chosen {key}": value for key, value in zip(choose, best)},
                "ours": chosen[report_metric].mean(),
                "std": chosen[report_metric].std(ddof=1) if len(chosen) > 1 else 0.0,  # the sample std
                "min": chosen[report_metric].min(),
                "max": chosen[report_metric].max(),
                "runs": len(chosen),
                "solved": int((chosen[report_metric] >= solved_at).sum()) if solved_at is not None else pd.NA,
                "values": tuple(sorted(chosen[report_metric].dropna())),
                **{metric: chosen[metric].mean() for metric in cell_metrics},
            }
        )
    columns = [
        *cells,
        *(f"chosen {key}" for key in choose),
        "ours",
        "std",
        "min",
        "max",
        "runs",
        "solved",
        "values",
        *cell_metrics,
    ]
    return pd.DataFrame(rows, columns=columns)
