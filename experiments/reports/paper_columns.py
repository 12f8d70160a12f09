"""A table report's further columns of the paper beside ours: ``report.paper_columns`` maps columns of the paper's
table (``paper.numbers.table``) to our metrics, e.g. ``{c4: paloma/c4, average: paloma/average}``
(experiments.config.report_layouts.TableReport).

Each cell of the cell table gets ``<column> ours``, the mean of the metric over the runs the selection chose for the
cell (as ``ours`` is the mean of ``report.metric``), and ``<column> paper``, the paper's number of the cell in that
column (found as ``paper.numbers.column``'s is: by ``where``, ``rows`` and ``printed_as``; the numbers of the text,
``values``, belong to ``paper.numbers.column`` alone).
"""

import dataclasses

import pandas as pd

from experiments.reports.paper_numbers import PaperNumbers, cell_numbers
from experiments.reports.paper_tables import available_paper_tables, paper_table

OURS, PAPER = "{} ours", "{} paper"


def paper_columns_of(layout) -> dict[str, str]:
    """Paper column -> our metric; {} for a report without paper columns (every kind but ``table``)."""
    return dict(getattr(layout, "paper_columns", None) or {})


def number_columns(table: str) -> list[str]:
    """The columns of the paper's table ``table`` that hold numbers (not its names of rows)."""
    printed = paper_table(table)
    return [column for column in printed.columns if pd.api.types.is_numeric_dtype(printed[column])]


def paper_columns_problems(layout, numbers: PaperNumbers) -> list[str]:
    """One message per paper column that is not a column of numbers of ``paper.numbers.table``, naming the valid
    ones; one if the report names paper columns without a paper table."""
    columns = paper_columns_of(layout)
    if not columns:
        return []
    if numbers.table not in available_paper_tables():
        return [
            f"report.paper_columns={columns!r} needs paper.numbers.table, the paper's table they are columns of "
            f"(got {numbers.table!r}; valid choices: {available_paper_tables()})"
        ]
    valid = number_columns(numbers.table)
    return [
        f"report.paper_columns: {column!r} is not a column of the paper's table {numbers.table}; valid choices: {valid}"
        for column in columns
        if column not in valid
    ]


def with_paper_columns(table: pd.DataFrame, layout, numbers: PaperNumbers, cells: list[str]) -> pd.DataFrame:
    """The cell table with ``<column> ours`` and ``<column> paper`` for each paper column, in their order, in place
    of the metrics' own columns (which ``select_cells`` added as the layout's cell metrics)."""
    columns = paper_columns_of(layout)
    paired = {}
    for column, metric in columns.items():
        paired[OURS.format(column)] = table[metric]
        paired[PAPER.format(column)] = cell_numbers(
            table, dataclasses.replace(numbers, column=column, values=[]), cells
        )
    return pd.concat([table.drop(columns=list(dict.fromkeys(columns.values()))), pd.DataFrame(paired)], axis=1)


def paired_names(layout) -> list[str]:
    """The cell table's columns of the paper columns: ``<column> ours``, ``<column> paper`` for each."""
    return [name.format(column) for column in paper_columns_of(layout) for name in (OURS, PAPER)]


def unrecorded_metrics(layout, finished: pd.DataFrame) -> list[str]:
    """The paper columns' metrics that no finished run (a row of ``finished``) records."""
    return [metric for metric in dict.fromkeys(paper_columns_of(layout).values()) if metric not in finished]
