"""``selection.merge``: several values of a cell key reported as one row, the selection choosing among them by its
metric as it chooses a learning rate; and paper numbers with one table column per value of a cell key."""

import pandas as pd
import pytest

from experiments.reports.paper_numbers import paper_numbers_of
from experiments.reports.selection import merged_runs, select_cells

RUNS = pd.DataFrame(
    [
        # model, task, lr, validation, test
        ("a", "t1", 1e-3, 0.6, 0.61),
        ("a", "t1", 1e-4, 0.9, 0.88),
        ("b", "t1", 1e-3, 0.8, 0.95),
        ("a", "t2", 1e-3, 0.3, 0.31),
        ("b", "t2", 1e-3, 0.7, 0.72),
        ("b", "t2", 1e-4, 0.2, 0.99),
        ("c", "t1", 1e-3, 0.5, 0.52),
        ("c", "t2", 1e-3, 0.4, 0.41),
    ],
    columns=["model", "task", "optim.lr", "val", "test"],
)


def select(merge: dict) -> pd.DataFrame:
    runs, merged = merged_runs(RUNS, merge, ["model", "task"])
    return select_cells(
        runs,
        cells=["model", "task"],
        choose=["optim.lr", *merged],
        average=[],
        select_metric="val",
        mode="max",
        report_metric="test",
    ).set_index(["model", "task"])


def test_a_merged_row_takes_the_member_and_lr_best_on_validation():
    table = select({"model": {"ab": ["a", "b"]}})
    assert sorted(table.index) == [("ab", "t1"), ("ab", "t2"), ("c", "t1"), ("c", "t2")]
    # t1: a at 1e-4 validates best (0.9) though b tests best; t2: b at 1e-3
    assert table.loc[("ab", "t1"), ["chosen merged model", "chosen optim.lr", "ours"]].tolist() == ["a", 1e-4, 0.88]
    assert table.loc[("ab", "t2"), ["chosen merged model", "chosen optim.lr", "ours"]].tolist() == ["b", 1e-3, 0.72]
    assert table.loc[("c", "t1"), "chosen merged model"] == "c"


def test_without_merge_every_value_is_its_own_row():
    assert len(select({})) == 6


@pytest.mark.parametrize(
    "merge, message",
    [
        ({"size": {"ab": ["a", "b"]}}, "selection.merge.size: 'size' is not one of the report's cells"),
        ({"model": {"ab": ["a"], "ac": ["a", "c"]}}, "'a' is merged into both 'ab' and 'ac'"),
        ({"model": {"ab": []}}, "must map each reported value to a non-empty list"),
    ],
)
def test_bad_merges_are_named(merge, message):
    with pytest.raises(ValueError, match=message):
        merged_runs(RUNS, merge, ["model", "task"])


def test_a_column_per_cell_value_names_columns_of_the_table():
    numbers = paper_numbers_of(
        {"numbers": {"table": "lra_test_accuracy", "column": {"task": {"lra_listops": "listops_acc", "x": "no_such"}}}}
    )
    assert numbers.problems(["model", "task"]) == [
        "paper.numbers.column='no_such' is not a column of lra_test_accuracy; valid choices: "
        "['model', 'paper_name', 'retrieval_acc', 'listops_acc', 'pathfinder_acc', 'g_image_acc', 'rgb_image_acc', "
        "'ranking']"
    ]
    keyed_wrong = paper_numbers_of({"numbers": {"table": "lra_test_accuracy", "column": {"size": {"a": "ranking"}}}})
    assert keyed_wrong.problems(["model", "task"]) == [
        "paper.numbers.column key 'size' must be one of the report's cells ['model', 'task']"
    ]
