"""The transcribed paper tables (results/paper/tables/) against the paper's LaTeX source, read at test time.

The source lives outside the repository (../shared/paper/xlstm_paper.tex beside the checkout, or where
XLSTM_SUITE_PAPER_TEX points); the tests that need it skip when it is not there (a user's clone). The tests of the
reader and of the tables' names run everywhere.
"""

import os
import re
from pathlib import Path

import pandas as pd
import pytest

from experiments.paths import PAPER_NUMBERS, REPOSITORY_ROOT
from experiments.reports.paper_tables import PAPER_TABLES, available_paper_tables, paper_table
from models.registry import known_language_models

PAPER_TEX_VARIABLE = "XLSTM_SUITE_PAPER_TEX"
DEFAULT_PAPER_TEX = REPOSITORY_ROOT.parent / "shared" / "paper" / "xlstm_paper.tex"
# Columns that are ours, not printed in the table's rows: the registry's names and the ablation half.
OUR_COLUMNS = {"part", "model", "size"}
# Tables of the paper not transcribed, and why; every other \label{tab:...} must have its CSV. The appendix's per-domain
# PALOMA table (tab:spaj300B_ppl_evaluation_detail, 571 subdomains) is referenced but its longtable is not in this
# copy of the source (a comment stands in its place), so there is nothing to quote or check.
NOT_TRANSCRIBED = {
    "lra_hyperparameters": "configuration of the LRA runs (blocks, width, batch size, steps), no result to compare",
}
NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?|NaN")
PRINTED_SIZE = re.compile(r"\d+(\.\d+)?[MB]")
MARKUP = re.compile(r"\\(?:textbf|underline|first|scd|bf|mbox|mathcal)\{([^{}]*)\}")
SYMBOLS = {r"\ding{51}": "True", r"\ding{55}": "False", r"\infty": "inf"}
LAYOUT = re.compile(r"\\multirow\{[^}]*\}\{[^}]*\}|\\rotatebox\[[^\]]*\]\{[^}]*\}")


@pytest.fixture(scope="module")
def paper_source() -> str:
    """The paper's LaTeX, comments removed."""
    path = Path(os.environ.get(PAPER_TEX_VARIABLE, DEFAULT_PAPER_TEX))
    if not path.is_file():
        if PAPER_TEX_VARIABLE in os.environ:
            pytest.fail(f"{PAPER_TEX_VARIABLE}={path} is not a file")
        pytest.skip(f"the paper's LaTeX source is not at {path}; set {PAPER_TEX_VARIABLE} to its path")
    return re.sub(r"(?<!\\)%.*", "", path.read_text())


def cell_text(cell: str) -> str:
    """A LaTeX cell as the CSV writes it: markup dropped, check marks as True/False, "-" and "X" empty."""
    for latex, text in SYMBOLS.items():
        cell = cell.replace(latex, text)
    while MARKUP.search(cell):  # nested, e.g. \underline{\textbf{13.43}}
        cell = MARKUP.sub(r"\1", cell)
    cell = re.sub(r"[{}$]", "", LAYOUT.sub("", cell)).strip()
    return "" if cell in ("-", "X") else cell


def latex_tabulars(source: str, label: str) -> list[list[list[str]]]:
    """The data rows (below the header rule) of each tabular in the table or figure that carries the label, as cell
    texts; an empty first cell (under a \\multirow) repeats the one above."""
    found = re.search(rf"\\label\{{(tab|fig):{re.escape(label)}\}}", source)
    assert found, f"no \\label{{tab:{label}}} or \\label{{fig:{label}}} in the paper's source"
    begin, environment = max(
        (source.rfind(f"\\begin{{{name}}}", 0, found.start()), name) for name in ("table", "wraptable", "figure")
    )
    end = source.index(f"\\end{{{environment}}}", found.start())
    tabulars = []
    for tabular in re.findall(r"\\begin\{tabular\}.*?\\end\{tabular\}", source[begin:end], re.DOTALL):
        body = tabular.split("\\midrule", 1)[1].split("\\bottomrule")[0].replace("\\midrule", "")
        rows, first = [], ""
        for line in filter(str.strip, body.split("\\\\")):
            cells = [cell_text(cell) for cell in line.split("&")]
            first = cells[0] = cells[0] or first
            rows.append(cells)
        tabulars.append(rows)
    return tabulars


def latex_grid(rows: list[list[str]]) -> tuple[list[str | None], list[list[str]]]:
    """A tabular's printed sizes (its first column when that holds "125M"-like cells, else None per row) and its
    other columns, a "12 / 64" column split in two and columns empty in every row (spacers) left out."""
    assert len({len(row) for row in rows}) == 1, f"rows of unequal length: {rows}"
    sized = all(PRINTED_SIZE.fullmatch(row[0]) for row in rows)
    sizes = [row[0] if sized else None for row in rows]
    columns = []
    for column in zip(*(row[1:] if sized else row for row in rows)):
        if any(" / " in cell for cell in column):
            columns += zip(*(cell.split(" / ") if cell else ["", ""] for cell in column))
        else:
            columns.append(column)
    return sizes, [list(row) for row in zip(*(column for column in columns if any(column)))]


def csv_rows(label: str) -> list[dict[str, str]]:
    """The CSV's rows as the text it holds (printed precision, empty cells as "")."""
    table = pd.read_csv(PAPER_TABLES / f"{label}.csv", dtype=str, keep_default_na=False)
    return table.to_dict("records")


def csv_grid(rows: list[dict[str, str]]) -> list[list[str]]:
    """The printed columns of these rows (not ours, not empty in all of them), in the CSV's order."""
    columns = [column for column in rows[0] if column not in OUR_COLUMNS and any(row[column] for row in rows)]
    return [[row[column] for column in columns] for row in rows]


def test_unknown_label_names_it_and_the_available_ones():
    with pytest.raises(ValueError, match=r"unknown paper table 'tab:lmeval'; available: \[.*'lmeval'.*\]"):
        paper_table("tab:lmeval")


def test_tables_name_models_and_sizes_of_our_registry():
    known = known_language_models()
    named = [
        (label, row["model"], row.get("size"))
        for label in available_paper_tables()
        for row in csv_rows(label)
        if row["model"]
    ]
    wrong = [
        f"{label}: {model} {size}"
        for label, model, size in named
        if model not in known or (size is not None and size not in known[model])
    ]
    assert not wrong, wrong


def test_parameter_counts_agree_with_the_tables_they_cite():
    counts = pd.read_csv(PAPER_NUMBERS / "param_counts.csv", dtype={"size": str})
    for count in counts.itertuples():
        table = paper_table(count.source)
        cited = table[(table["model"] == count.model) & (table["size"] == count.size)]["params_m"].unique()
        assert list(cited) == [count.paper_m], f"{count.model} {count.size} in {count.source}: {cited}"


def test_every_result_table_of_the_paper_is_transcribed(paper_source):
    labels = set(re.findall(r"\\label\{tab:([^}]+)\}", paper_source))
    missing = labels - set(NOT_TRANSCRIBED) - set(available_paper_tables())
    assert not missing, f"tables of the paper without a CSV in {PAPER_TABLES}: {sorted(missing)}"


@pytest.mark.parametrize("label", available_paper_tables())
def test_every_cell_matches_the_latex_in_place(paper_source, label):
    """Row by row and column by column, empty cells included: a value in a "-" cell's place fails too."""
    tabulars, ours = latex_tabulars(paper_source, label), csv_rows(label)
    assert len(ours) == sum(map(len, tabulars)), f"{label}: {len(ours)} CSV rows, {sum(map(len, tabulars))} LaTeX"
    for rows in tabulars:
        ours_here, ours = ours[: len(rows)], ours[len(rows) :]
        sizes, grid = latex_grid(rows)
        for number, (row, size, cells, printed) in enumerate(zip(ours_here, sizes, csv_grid(ours_here), grid)):
            assert size is None or size == row["size"].upper(), f"{label} {row}: printed size {size}"
            assert cells == printed, f"{label} row {number} of its tabular"


@pytest.mark.parametrize("label", available_paper_tables())
def test_first_and_last_numbers_are_in_the_row_of_that_model(paper_source, label):
    """Found by name (and size), not by position: each row's first and last number lie in the LaTeX row that prints
    the same names and flags."""
    latex = [
        (size, [cell for cell in cells if cell])
        for rows in latex_tabulars(paper_source, label)
        for size, cells in zip(*latex_grid(rows))
    ]
    for row in csv_rows(label):
        printed = [value for column, value in row.items() if column not in OUR_COLUMNS and value]
        names = [value for value in printed if not NUMBER.fullmatch(value)]
        numbers = [value for value in printed if NUMBER.fullmatch(value)]
        size = row["size"].upper() if "size" in row else None
        matches = [
            cells
            for printed_size, cells in latex
            if printed_size in (None, size) and [cell for cell in cells if not NUMBER.fullmatch(cell)] == names
        ]
        assert len(matches) == 1, f"{label}: {len(matches)} LaTeX rows print {names} at size {size}"
        assert {numbers[0], numbers[-1]} <= set(matches[0]), f"{label}: {numbers} not all in {matches[0]}"
