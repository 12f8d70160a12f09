"""A table report's wide table: one column per value of a cell key (e.g. the task), one row per value of the others
(e.g. the model), the paper's number beside ours, optionally a random-baseline row and a Ranking column.

Rules, stated on the page: a value that does not beat the column's guessing accuracy (its task spec's
random_accuracy) is X; the Ranking is the mean over the columns of a row's rank in that column (1 = best), tied values
sharing their best rank and X ranked last (tied with the other X's), a column without a value of the row left out of
its mean. From the paper's own accuracies this reproduces its Ranking column for xLSTM, LSTM and LSTM (Block) in Table
lra_test_accuracy (1.6, 5.4, 3.4: two X's tied at rank 5 give LSTM's 5.4; ranking them 5 and 6, or 5.5 each, does
not) but not for Llama, Mamba, RWKV-4: their ranks from the printed accuracies are 5.0, 2.6, 2.8 against the printed
5.2, 2.2, 3.0, and no tie rule, X rule or subset of tasks gives the printed three (tests/experiments/reports/test_lra_artifact.py).
"""

import math

import pandas as pd

from experiments.config.configuration import task_config
from experiments.display import label, value_name
from experiments.reports.paper_numbers import paper_numbers_of, printed_rows
from experiments.reports.selection import MERGED
from tasks.registry import task_spec

FAILS = "X"


def ranks(values: pd.DataFrame, fails: pd.DataFrame, mode: str) -> pd.Series:
    """Each row's mean rank over the columns of ``values`` (rows x columns; NaN: no value) where ``fails`` marks the
    values ranked last (X); ``mode`` max: higher is better. Ties share their best rank ("1, 2, 2, 4")."""
    sign = -1 if mode == "max" else 1
    ordered = (sign * values).mask(fails, math.inf)
    ordered = ordered.mask(values.isna() & ~fails)
    return ordered.rank(axis=0, method="min", na_option="keep").mean(axis=1, skipna=True)


def chance_of(columns: list) -> dict:
    """Each task's guessing accuracy from its spec."""
    return {task: task_spec(task_config(task)).random_accuracy for task in columns}


def wide_tables(table: pd.DataFrame, columns_key: str, row_keys: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(ours, the paper's) as rows x columns frames, in the cell table's order."""
    frames = [
        table.pivot_table(
            index=row_keys, columns=columns_key, values=value, aggfunc="first", dropna=False, sort=False
        ).reindex(columns=list(dict.fromkeys(table[columns_key])))
        for value in ("ours", "paper")
    ]
    order = list(dict.fromkeys(table[row_keys].itertuples(index=False, name=None)))
    order = [row[0] if len(row_keys) == 1 else row for row in order]
    return tuple(frame.reindex(index=order) for frame in frames)


def wide_markdown(layout, table: pd.DataFrame, mode: str, printed_ranking: pd.Series | None = None) -> str:
    """The wide table of a table report with ``columns``; ``printed_ranking``: the paper's printed ranking per row
    (indexed like the rows), shown beside the ranking computed from its numbers."""
    row_keys = [key for key in layout.cells if key != layout.columns]
    ours, paper = wide_tables(
        table.assign(ours=table["ours"].astype(float), paper=table["paper"].astype(float)), layout.columns, row_keys
    )
    chance = chance_of(list(ours.columns)) if layout.random_baseline else {}
    ours_fail = ours.apply(lambda column: column <= chance.get(column.name, -math.inf)) & ours.notna()
    # the paper prints X as an empty cell in a row it prints: a row with a number in some column
    paper_fail = (
        paper.isna() & paper.notna().any(axis=1).to_numpy()[:, None]
        if layout.random_baseline
        else pd.DataFrame(False, index=paper.index, columns=paper.columns)
    )

    def shown(value: float, fails: bool) -> str:
        return FAILS if fails else ("" if pd.isna(value) else f"{value:.3f}")

    header = ["", *(part for column in ours.columns for part in (value_name(layout.columns, column), "paper"))]
    rows = []
    if (
        layout.random_baseline
    ):  # the task specs' (tests/experiments/reports/test_lra_artifact.py: the paper's row is the same)
        rows.append(["Random Baseline", *(part for column in ours.columns for part in (f"{chance[column]:.3f}",) * 2)])
    for row in ours.index:
        name = " ".join(value_name(key, value) for key, value in zip(row_keys, row if len(row_keys) > 1 else (row,)))
        rows.append(
            [
                name,
                *(
                    part
                    for column in ours.columns
                    for part in (
                        shown(ours.loc[row, column], ours_fail.loc[row, column]),
                        shown(paper.loc[row, column], paper_fail.loc[row, column]),
                    )
                ),
            ]
        )
    if layout.ranking:
        header += ["Ranking", "paper"] + (["paper (printed)"] if printed_ranking is not None else [])
        ours_rank, paper_rank = ranks(ours, ours_fail, mode), ranks(paper, paper_fail, mode)
        offset = 1 if layout.random_baseline else 0
        for index, row in enumerate(ours.index):
            shown_ranks = [
                ours_rank[row],
                paper_rank[row],
                *([printed_ranking.get(row, math.nan)] if printed_ranking is not None else []),
            ]
            rows[offset + index] += ["" if pd.isna(rank) else f"{rank:.1f}" for rank in shown_ranks]
        if layout.random_baseline:
            rows[0] += [""] * (len(header) - len(rows[0]))
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def rules_markdown(layout, mode: str) -> str:
    """The page's statement of the X and ranking rules."""
    best = "highest" if mode == "max" else "lowest"
    lines = []
    if layout.random_baseline:
        lines.append(
            "X: a value that does not beat the column's random baseline (its task's guessing accuracy); "
            "the paper's X is an empty cell of a row it prints."
        )
    if layout.ranking:
        lines.append(
            f"Ranking: the mean over the {label(layout.columns).lower()} columns of the row's rank in the "
            f"column (rank 1: the {best} value; tied values share their best rank; X ranked last, tied with "
            "the other X's; a column without a value left out), so a lower Ranking is better; `paper` ranks "
            "the paper's numbers of these rows and columns by the same rule; `paper (printed)`, where shown, "
            "is the paper's own ranking, over all of its rows and columns."
        )
    return " ".join(lines)


def printed_ranking(paper: dict, table: pd.DataFrame, layout) -> pd.Series | None:
    """The paper's printed ranking per row of the wide table (``paper.numbers.ranking``), or None."""
    numbers = paper_numbers_of(paper)
    if not (layout.ranking and numbers.table and numbers.ranking):
        return None
    row_keys = [key for key in layout.cells if key != layout.columns]
    rows = table[row_keys].drop_duplicates().reset_index(drop=True)
    values = printed_rows(numbers, rows, numbers.ranking)
    return pd.Series(
        values.to_numpy(), index=[row[0] if len(row) == 1 else row for row in rows.itertuples(index=False, name=None)]
    )


def merged_choices_markdown(table: pd.DataFrame, columns_key: str) -> str:
    """Which merged value the selection chose in each cell of a merged row ("xLSTM: Listops xLSTM[1:0], ...")."""
    lines = []
    for column in [name for name in table.columns if name.startswith(f"chosen {MERGED.format('')}")]:
        key = column.removeprefix(f"chosen {MERGED.format('')}")
        chosen = table[table[column].notna() & (table[column] != table[key])]
        for row, cells in chosen.groupby(key, sort=False):
            lines.append(
                f"{value_name(key, row)} chose, by the selection metric: "
                + ", ".join(
                    f"{value_name(columns_key, cell[columns_key])} {value_name(key, cell[column])}"
                    for _, cell in cells.iterrows()
                )
                + "."
            )
    return " ".join(lines)
