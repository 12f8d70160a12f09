"""The paper's numbers beside ours: a report's cells get the transcribed table's column where the artifact says, and
the numbers the paper prints in its text."""

import pandas as pd
import pytest

from experiments.reports.paper_numbers import PAPER_ROW, paper_numbers_of, printed_row_names, with_paper_numbers
from experiments.reports.paper_tables import paper_table
from experiments.reports.rankings import cell_names

TABLE_1 = {
    "table": "spaj15b_model_results",
    "column": "ppl_slimpajama_15b",
    "where": {"optim.lr": 1.0e-3},
    "values": [{"cell": {"model": "rwkv6", "optim.lr": 4.0e-4}, "value": 16.38, "source": "Appendix B.2"}],
}
CELLS = ["model", "optim.lr"]


def test_cells_get_the_tables_column_and_the_texts_numbers():
    cells = pd.DataFrame(
        {
            "model": ["xlstm_1_0", "llama", "rwkv6", "rwkv6", "lstm"],
            "optim.lr": [1.0e-3, 1.0e-3, 1.0e-3, 4.0e-4, 1.0e-3],
        }
    )
    printed = paper_table("spaj15b_model_results").set_index("model")["ppl_slimpajama_15b"]
    values = with_paper_numbers(cells, {"numbers": TABLE_1}, CELLS)
    assert values.tolist()[:3] == [printed["xlstm_1_0"], printed["llama"], printed["rwkv6"]]
    assert values[3] == 16.38  # "This model reaches a perplexity of 16.38" (the 4e-4 run), not the table's 15.03
    assert pd.isna(values[4])  # the table has no LSTM row


def test_cells_outside_where_get_no_table_number():
    cells = pd.DataFrame({"model": ["llama"], "optim.lr": [2.0e-3]})
    assert with_paper_numbers(cells, {"numbers": TABLE_1}, CELLS).isna().all()


def test_an_artifact_without_numbers_gets_none():
    cells = pd.DataFrame({"model": ["llama"], "optim.lr": [1.0e-3]})
    assert with_paper_numbers(cells, {}, CELLS).isna().all()


MATRIX_MEMORY = {
    "table": "abl_matrixmemory",
    "column": "ppl_slimpajama_15b",
    "rows": [
        {"cell": {"block": "post"}, "row": {"details": "Post Up-Projection Block (ReLU2)"}},
        {"cell": {"block": "pre", "conv": 0}, "row": {"details": "Pre Up-Projection Block, No Convolution"}},
        {"cell": {"block": "pre", "conv": 4}, "row": {"num_blocks": 48, "params_m": 409.3}},
    ],
}


def test_variants_of_one_model_get_the_row_their_rows_entry_names():
    """Table abl_matrixmemory prints xLSTM[1:0] three times; each variant takes its own row, named by any columns."""
    cells = pd.DataFrame(
        {"model": ["xlstm_1_0"] * 3 + ["llama"], "block": ["pre", "post", "pre", "pre"], "conv": [4, 0, 0, 4]}
    )
    values = with_paper_numbers(cells, {"numbers": MATRIX_MEMORY}, ["model", "block", "conv"])
    assert values[:3].tolist() == [13.43, 13.90, 15.41]
    assert pd.isna(values[3])  # the table has no Llama row


def test_variants_of_one_model_go_by_their_printed_rows_name_on_pages_and_figures():
    cells = pd.DataFrame(
        {"model": ["xlstm_1_0"] * 3 + ["llama"], "block": ["pre", "post", "pre", "pre"], "conv": [4, 0, 0, 4]}
    )
    keys = ["model", "block", "conv"]
    names = printed_row_names(cells, {"numbers": MATRIX_MEMORY}, keys)
    assert names.tolist() == [
        "48, 409.3",
        "Post Up-Projection Block (ReLU2)",
        "Pre Up-Projection Block, No Convolution",
        "",
    ]
    assert cell_names(cells.assign(**{PAPER_ROW: names}), keys) == [
        "xLSTM[1:0] 48, 409.3",
        "xLSTM[1:0] Post Up-Projection Block (ReLU2)",
        "xLSTM[1:0] Pre Up-Projection Block, No Convolution",
        "Llama block=pre conv=4",
    ]  # no row: by its keys
    assert printed_row_names(cells, {"numbers": TABLE_1}, keys) is None  # no variants: no such column


@pytest.mark.parametrize(
    "numbers, message",
    [
        (
            {
                "table": "abl_matrixmemory",
                "column": "ppl_slimpajama_15b",
                "rows": [{"cell": {"model": "xlstm_1_0"}, "row": {"num_blocks": 48}}],
            },
            "paper.numbers.rows[0]: row {'num_blocks': 48} matches 2 rows of abl_matrixmemory, not one",
        ),
        (
            {
                "table": "abl_matrixmemory",
                "column": "ppl_slimpajama_15b",
                "rows": [{"cell": {"model": "xlstm_1_0"}, "row": {"blocks": 48}}],
            },
            "['blocks'] are not columns of abl_matrixmemory; valid choices",
        ),
        (
            {"rows": [{"cell": {"seed": 0}, "row": {"details": "x"}}]},
            "needs cell (keys of ['model', 'optim.lr']) and row",
        ),
        ({"table": "table1"}, "needs both table and column"),
        ({"table": "table1", "column": "ppl"}, "paper.numbers.table='table1' is not valid; valid choices: ["),
        ({"table": "spaj15b_model_results", "column": "ppl"}, "'ppl' is not a column of spaj15b_model_results"),
        ({"where": {"seed": 0}}, "where key 'seed' must be one of the report's cells"),
        (
            {"values": [{"cell": {"size": "350m"}, "value": 1.0}]},
            "needs cell (keys of ['model', 'optim.lr']), value and source",
        ),
    ],
)
def test_bad_paper_numbers_are_named(numbers, message):
    assert any(message in problem for problem in paper_numbers_of({"numbers": numbers}).problems(CELLS))


def test_unknown_keys_are_named():
    with pytest.raises(ValueError, match=r"paper.numbers keys \['colum'\] are not valid; valid choices"):
        paper_numbers_of({"numbers": {"colum": "x"}})
