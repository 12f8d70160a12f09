"""The paper's numbers beside ours: an artifact's ``paper.numbers`` names the transcribed table and column that hold
them (results/paper/tables, experiments.reports.paper_tables) and the numbers the paper prints only in its text.

    paper:
      numbers:
        table: spaj15b_model_results   # the table's label
        column: ppl_slimpajama_15b     # the column with the reported metric
        where: {optim.lr: 1.0e-3}      # the cells the table's numbers belong to (default: every cell; a cell
                                       # without one of its keys, e.g. a smoke scale's stand-in size, is not one)
        values:                        # numbers of the text, each for one cell
          - {cell: {model: rwkv6, optim.lr: 4.0e-4}, value: 16.38, source: "Appendix B.2"}

A table row belongs to the cells whose keys it shares (``model``, and the table's ``size``, the cells'
``model.size``); a table that prints several sizes gives no number to cells without a size (a smoke scale's
stand-in sizes). Where the table prints one model several times (variants of it), ``rows`` names the printed row of
the cells of each variant (of that row's model):

        rows:                          # the cells matching ``cell`` take the row whose columns have these values
          - {cell: {model.options.mlstm.conv1d_kernel_size: 0}, row: {details: "Pre Up-Projection Block, No Convolution"}}

A table with one column per value of a cell key (a column per task) names them by a mapping, and a row that names no
single model of ours (``model`` empty) belongs to the cells of the value ``printed_as`` gives its printed name:

        column: {task: {lra_listops: listops_acc, lra_pathfinder: pathfinder_acc}}
        printed_as: {xlstm: xLSTM}     # the cells of model xlstm take the row printed "xLSTM" (paper_name)
        ranking: ranking               # the column of the paper's ranking of the models (a wide table's Ranking)
"""

from dataclasses import dataclass, field

import pandas as pd

from experiments.reports.paper_tables import available_paper_tables, paper_table

NUMBERS_KEYS = ("table", "column", "where", "values", "printed_as", "ranking", "rows")
SIZE_KEY = "model.size"  # the cell key of a paper table's ``size`` column (a size preset, e.g. 350m)
PAPER_ROW = "paper row"  # a cell table's column of the printed rows' names (``rows``: one model's variants)


@dataclass(frozen=True)
class PaperNumbers:
    table: str | None = None
    column: str | dict | None = None
    where: dict = field(default_factory=dict)
    values: list[dict] = field(default_factory=list)
    printed_as: dict = field(default_factory=dict)
    ranking: str | None = None
    rows: list[dict] = field(default_factory=list)

    def columns(self) -> dict[tuple[str, object] | None, str]:
        """(cell key, value) -> the table's column of those cells; None -> the one column of every cell."""
        if isinstance(self.column, dict):
            return {(key, value): column for key, by_value in self.column.items() for value, column in by_value.items()}
        return {None: self.column}

    def problems(self, cells: list[str]) -> list[str]:
        """One message per bad key or value, naming the valid choices."""
        problems = []
        if (self.table is None) != (self.column is None):
            problems.append(
                f"paper.numbers needs both table and column, got table={self.table!r} column={self.column!r}"
            )
        elif self.table is not None:
            if self.table not in available_paper_tables():
                problems.append(
                    f"paper.numbers.table={self.table!r} is not valid; valid choices: {available_paper_tables()}"
                )
            else:
                columns = list(paper_table(self.table).columns)
                if isinstance(self.column, dict) and (
                    len(self.column) != 1 or not all(isinstance(by_value, dict) for by_value in self.column.values())
                ):
                    problems.append(
                        f"paper.numbers.column={self.column!r} must be a column name or map one cell key "
                        "to value -> column name"
                    )
                    named = []
                else:
                    named = [*self.columns().values(), *([self.ranking] if self.ranking else [])]
                for column in named:
                    if column not in columns:
                        problems.append(
                            f"paper.numbers.column={column!r} is not a column of {self.table}; valid choices: {columns}"
                        )
                for key in self.column if isinstance(self.column, dict) else {}:
                    if key not in cells:
                        problems.append(f"paper.numbers.column key {key!r} must be one of the report's cells {cells}")
                if not set(columns) & set(cells):
                    problems.append(f"paper.numbers.table={self.table!r} shares no key with the report's cells {cells}")
        for key in self.where:
            if key not in cells:
                problems.append(f"paper.numbers.where key {key!r} must be one of the report's cells {cells}")
        for index, item in enumerate(self.rows):
            unknown = sorted(set(item.get("cell") or {}) - set(cells)) if isinstance(item.get("cell"), dict) else []
            if (
                not isinstance(item.get("cell"), dict)
                or not item["cell"]
                or unknown
                or not isinstance(item.get("row"), dict)
            ):
                problems.append(
                    f"paper.numbers.rows[{index}]={item!r} needs cell (keys of {cells}) and row (table "
                    "column -> printed value)"
                )
            elif self.table in available_paper_tables():
                try:
                    printed_row(self.table, item["row"])
                except ValueError as error:
                    problems.append(f"paper.numbers.rows[{index}]: {error}")
        for index, item in enumerate(self.values):
            unknown = sorted(set(item.get("cell") or {}) - set(cells))
            if not isinstance(item.get("cell"), dict) or unknown or "value" not in item or "source" not in item:
                problems.append(
                    f"paper.numbers.values[{index}]={item!r} needs cell (keys of {cells}), value and source"
                )
        return problems


def paper_numbers_of(paper: dict) -> PaperNumbers:
    numbers = paper.get("numbers") or {}
    unknown = sorted(set(numbers) - set(NUMBERS_KEYS))
    if unknown:
        raise ValueError(f"paper.numbers keys {unknown} are not valid; valid choices: {list(NUMBERS_KEYS)}")
    return PaperNumbers(
        table=numbers.get("table"),
        column=numbers.get("column"),
        where=dict(numbers.get("where") or {}),
        values=list(numbers.get("values") or []),
        printed_as=dict(numbers.get("printed_as") or {}),
        ranking=numbers.get("ranking"),
        rows=list(numbers.get("rows") or []),
    )


def printed_row(table: str, row: dict) -> pd.Series:
    """The one row of paper table ``table`` whose columns hold the values of ``row`` (compared as printed text);
    ValueError naming the columns and how many rows match."""
    printed = paper_table(table)
    unknown = sorted(set(row) - set(printed.columns))
    if unknown:
        raise ValueError(f"row {row!r}: {unknown} are not columns of {table}; valid choices: {list(printed.columns)}")
    matches = pd.Series(True, index=printed.index)
    for column, value in row.items():
        matches &= printed[column].astype(str) == str(value)
    if matches.sum() != 1:
        raise ValueError(f"row {row!r} matches {int(matches.sum())} rows of {table}, not one")
    return printed[matches].iloc[0]


def cells_matching(table: pd.DataFrame, cell: dict) -> pd.Series:
    """Which rows of a cell table hold every key of ``cell`` at its value (a cell without the key: not one)."""
    matches = pd.Series(True, index=table.index)
    for key, value in cell.items():
        matches &= (table[key] == value) if key in table else False
    return matches


def printed_rows(numbers: PaperNumbers, rows: pd.DataFrame, column: str) -> pd.Series:
    """The table's ``column`` for each row of ``rows`` (a frame of cell keys), joined on the keys they share; NaN for
    a row the table does not print. Rows printed without a model of ours join by ``printed_as``."""
    printed = paper_table(numbers.table).rename(columns={"size": SIZE_KEY})
    if SIZE_KEY in printed and SIZE_KEY not in rows and printed[SIZE_KEY].nunique() > 1:
        return pd.Series(float("nan"), index=rows.index)
    if numbers.printed_as and "model" in printed:
        value_of = {name: value for value, name in numbers.printed_as.items()}
        printed["model"] = printed["model"].fillna(printed["paper_name"].map(value_of))
    keys = [key for key in rows.columns if key in printed.columns]
    printed = printed.dropna(subset=keys).drop_duplicates(subset=keys)[[*keys, column]]
    joined = rows[keys].astype(str).merge(printed.astype({key: str for key in keys}), on=keys, how="left")
    return pd.Series(pd.to_numeric(joined[column], errors="coerce").to_numpy(), index=rows.index)


def with_paper_numbers(table: pd.DataFrame, paper: dict, cells: list[str]) -> pd.Series:
    """The paper's number of each row of ``table`` (a cell table with the ``cells`` columns); NaN where it prints
    none."""
    return cell_numbers(table, paper_numbers_of(paper), cells)


def cell_numbers(table: pd.DataFrame, numbers: PaperNumbers, cells: list[str]) -> pd.Series:
    """``numbers``' value of each row of ``table`` (a cell table with the ``cells`` columns); NaN where it has none."""
    values = pd.Series(float("nan"), index=table.index)
    if numbers.table is not None:
        for key_value, column in numbers.columns().items():
            matches = cells_matching(table, numbers.where | dict([key_value] if key_value else []))
            values = values.where(~matches, printed_rows(numbers, table[cells], column))
            for _, row, belongs in row_cells(table, numbers, cells):
                values[matches & belongs] = pd.to_numeric(row[column], errors="coerce")
    for item in numbers.values:
        values[cells_matching(table, item["cell"])] = float(item["value"])
    return values


def row_cells(table: pd.DataFrame, numbers: PaperNumbers, cells: list[str]):
    """Per item of ``rows``: the item, its printed row and which rows of ``table`` take it (those matching the
    item's cell that share the row's model, and size)."""
    for item in numbers.rows:
        row = printed_row(numbers.table, item["row"])
        shared = {key: row[key] for key in cells if key in row.index and pd.notna(row[key])}
        yield item, row, cells_matching(table, item["cell"] | shared)


def printed_row_names(table: pd.DataFrame, paper: dict, cells: list[str]) -> pd.Series | None:
    """Where the table prints one model several times (``rows``): the name each cell's printed row goes by there,
    its ``row`` values (e.g. "No Gates, +inf"), for pages and figures to name the variant by; blank for a cell that
    takes no such row. None for an artifact without ``rows``."""
    numbers = paper_numbers_of(paper)
    if not numbers.rows:
        return None
    names = pd.Series("", index=table.index, dtype=object)
    for item, _, belongs in row_cells(table, numbers, cells):
        names[belongs & cells_matching(table, numbers.where)] = ", ".join(str(value) for value in item["row"].values())
    return names
