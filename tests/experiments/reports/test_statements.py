"""Every kind of statement a report page makes is computed from the cells (experiments.reports.statements and
experiments.reports.finding_checks): each is fed cells that make it true and cells that make it false, and its words
follow the numbers (the statements issue 33 found wrong are among the cases)."""

import math

import numpy as np
import pandas as pd
import pytest

from experiments.reports.finding_checks import CheckContext, check
from experiments.reports.findings import (
    DOES_NOT_HOLD,
    HOLDS,
    NOT_MEASURED,
    PARTLY,
    Finding,
)
from experiments.reports.page_summary import verdict
from experiments.reports.statements import (
    change_class,
    growth_agreement,
    growth_class,
    growth_exponent,
    interval_overlaps,
    order_agreement,
    relative_change,
    separation,
)


def cell_table(rows: list[dict]) -> pd.DataFrame:
    """Cells as report.cell_table makes them, from (model, task, x, values[, paper, oom]) rows."""
    frame = pd.DataFrame(rows)
    frame["values"] = [tuple(values) for values in frame["values"]]
    frame["ours"] = [float(np.mean(values)) if values else math.nan for values in frame["values"]]
    frame["runs"] = [len(values) for values in frame["values"]]
    frame["std"] = [float(np.std(values, ddof=1)) if len(values) > 1 else 0.0 for values in frame["values"]]
    frame["min"] = [min(values) if values else math.nan for values in frame["values"]]
    frame["max"] = [max(values) if values else math.nan for values in frame["values"]]
    return frame


def context_of(table: pd.DataFrame, mode: str = "min", **more) -> CheckContext:
    names = pd.Series([f"{model} {task}" for model, task in zip(table["model"], table["task"])], index=table.index)
    return CheckContext(cells=["model", "task", "x"], metric="m", mode=mode, x="x", names=names, **more)


# --- orderings: pairs within a task only -----------------------------------------------------------------------------


def test_order_agreement_pairs_cells_within_a_task_never_across_tasks():
    # every Pathfinder cell beats every ListOps cell in both orders (the tasks' scales), but within each task our
    # order is the paper's reversed: across-task pairs would agree, within-task pairs all disagree
    names = ["a ListOps", "b ListOps", "c ListOps", "a Path", "b Path"]
    tasks = ["ListOps", "ListOps", "ListOps", "Path", "Path"]
    paper = [0.40, 0.30, 0.20, 0.90, 0.80]
    reversed_within = [0.20, 0.30, 0.40, 0.80, 0.90]
    found = order_agreement(names, tasks, reversed_within, paper, "max")
    assert (found.pairs, found.agreeing, len(found.disagreeing)) == (4, 0, 4)  # 3 + 1 pairs, none across tasks
    assert found.tau == -1.0 and found.holds == "no"
    assert (
        "0 of 4 pairs are in the paper's order (Kendall's tau-a -1.00) (ListOps: 0 of 3; Path: 0 of 1)"
        in found.sentence()
    )
    assert ("a ListOps", "c ListOps") in found.disagreeing  # the paper's better first
    same = order_agreement(names, tasks, paper, paper, "max")
    assert (same.agreeing, same.tau, same.holds) == (4, 1.0, "yes")
    one_swapped = order_agreement(names, tasks, [0.40, 0.20, 0.30, 0.90, 0.80], paper, "max")
    assert (one_swapped.agreeing, one_swapped.holds) == (3, "partly")  # 3 of 4 >= 2/3


def test_order_agreement_reads_lower_as_better_in_min_mode_and_ignores_ties_and_missing_numbers():
    found = order_agreement(["a", "b", "c"], ["", "", ""], [1.0, 2.0, 2.0], [10.0, 20.0, math.nan], "min")
    assert (found.pairs, found.agreeing, found.disagreeing) == (1, 1, [])  # c has no paper number
    tie = order_agreement(["a", "b"], ["", ""], [1.0, 1.0], [10.0, 20.0], "min")
    assert (tie.pairs, tie.agreeing, tie.disagreeing, tie.tau) == (1, 0, [], 0.0)


# --- interval overlaps -----------------------------------------------------------------------------------------------


def test_interval_overlaps_names_the_pairs_that_are_apart():
    # issue 33: "the 99% t-intervals of all five models overlap" was false for LSTM and xLSTM[0:1]
    found = interval_overlaps(
        {"LSTM": (0.07311, 0.07517), "xLSTM[0:1]": (0.07052, 0.07306), "Llama": (0.07172, 0.07358)}
    )
    assert found.apart == [("LSTM", "xLSTM[0:1]")]
    sentence = found.sentence("99% t-interval", 5)
    assert sentence.startswith(
        "1 of the 3 pairs of 99% t-intervals does not overlap: LSTM [0.07311, 0.07517] and "
        "xLSTM[0:1] [0.07052, 0.07306]"
    )
    touching = interval_overlaps({"a": (0.0, 1.0), "b": (1.0, 2.0), "c": (0.5, math.nan)})  # c: no interval
    assert (
        touching.overlapping == [("a", "b")]
        and touching.sentence("interval", 1) == "Every two of the 2 intervals overlap."
    )
    assert interval_overlaps({"a": (0, 1), "b": (2, 3)}).sentence("interval", 0) == "No two of the 2 intervals overlap."


# --- growth ----------------------------------------------------------------------------------------------------------

LENGTHS = [128, 256, 512, 1024, 2048, 4096]


@pytest.mark.parametrize(
    "values, expected",
    [
        ([5.0 for _ in LENGTHS], "flat"),
        ([0.01 * x for x in LENGTHS], "linear"),
        ([1e-5 * x * x for x in LENGTHS], "quadratic"),
        ([x**0.5 for x in LENGTHS], "sublinear"),
        ([x**1.5 for x in LENGTHS], "superlinear"),
        ([1 / x for x in LENGTHS], "falling"),
        ([20.9, 11.6, 11.6, 11.6, 11.6, 11.6], "flat"),  # the upper half of the lengths decides
    ],
)
def test_growth_class_follows_the_exponent_over_the_upper_half_of_the_sizes(values, expected):
    assert growth_class(growth_exponent(LENGTHS, values)) == expected


def test_growth_from_two_sizes_falls_by_its_exponent_and_one_size_says_unknown():
    # issue 33: per-token time 20.9 -> 11.6 ms from 256 to 1024 was called "flat"
    k = growth_exponent([256, 1024], [20.9, 11.6])
    assert k == pytest.approx(math.log(11.6 / 20.9) / math.log(4)) and growth_class(k) == "falling"
    assert growth_class(growth_exponent([256], [1.0])) == "unknown"
    assert [growth_agreement("quadratic", found) for found in ("quadratic", "superlinear", "linear")] == [
        "yes",
        "partly",
        "no",
    ]


# --- separation of cells against their seeds' spread ----------------------------------------------------------------


def test_separation_says_the_ratio_it_computes_not_a_rounder_one():
    # issue 33: "at least three times the widest seed range" where 10.0 / 3.4 = 2.94
    found = separation(
        ["pre", "post", "none"], [221.2, 245.0, 231.2], [220.0, 244.0, 229.5], [222.4, 246.0, 232.9], [2, 2, 2]
    )
    assert found.closest == ("pre", "none") and found.gap == pytest.approx(10.0)
    assert found.widest_cell == "none" and found.ratio == pytest.approx(10.0 / 3.4)
    sentence = found.sentence(1)
    assert "2.94 times the widest range" in sentence and "every two cells differ by more" in sentence
    close = separation(["a", "b"], [1.0, 1.1], [0.5, 1.0], [1.5, 1.2], [3, 3])
    assert close.ratio < 1 and "the closest two cells differ by less" in close.sentence(2)
    assert separation(["a", "b"], [1.0, 2.0], [1.0, 2.0], [1.0, 2.0], [1, 1]) is None  # no cell of two runs


def test_change_keeps_within_the_tolerance_and_rises_beyond_it():
    assert relative_change(200.0, 216.0) == pytest.approx(0.08)
    assert [change_class(change, 0.05) for change in (-0.3, 0.0, 0.049, 0.05, 0.5)] == [
        "keeps",
        "keeps",
        "keeps",
        "rises",
        "rises",
    ]


# --- each kind of finding, checked against cells that make it hold and not ------------------------------------------


def judged(finding: Finding, rows: list[dict], mode: str = "min", **more) -> str:
    table = cell_table(rows)
    return check(finding, table, context_of(table, mode, **more)).holds


def test_a_solved_finding_holds_when_every_run_solves_and_not_when_none_does():
    finding = Finding(quote="q", source="s", expect={"solved": ["lstm"], "unsolved": ["llama"]}, threshold=0.9)
    rows = lambda lstm, llama: [
        {"model": "lstm", "task": "parity", "x": 1, "values": lstm},
        {"model": "llama", "task": "parity", "x": 1, "values": llama},
    ]
    assert judged(finding, rows([1.0, 0.95], [0.1, 0.2]), "max") == HOLDS
    assert judged(finding, rows([1.0, 0.5], [0.1, 0.2]), "max") == PARTLY  # lstm mixed
    assert judged(finding, rows([0.1, 0.2], [1.0, 0.95]), "max") == DOES_NOT_HOLD
    assert judged(finding, rows([], []), "max") == NOT_MEASURED


def test_a_below_finding_compares_each_run_with_the_other_models_mean():
    finding = Finding(quote="q", source="s", expect={"below": ["xlstm_0_1"]}, than="lstm")
    rows = lambda mine: [
        {"model": "lstm", "task": "nns", "x": 1, "values": [0.0740, 0.0741, 0.0742]},
        {"model": "xlstm_0_1", "task": "nns", "x": 1, "values": mine},
    ]
    assert judged(finding, rows([0.0700, 0.0701, 0.0702])) == HOLDS
    assert judged(finding, rows([0.080, 0.081, 0.082])) == DOES_NOT_HOLD
    # with intervals: below in every run but the 99% t-intervals share values -> partly
    assert judged(finding, rows([0.0737, 0.0738, 0.0739]), confidence=0.99) == PARTLY
    assert judged(finding, rows([0.0700, 0.0701, 0.0702]), confidence=0.99) == HOLDS


def test_an_order_finding_holds_only_for_the_papers_order_within_each_task():
    finding = Finding(quote="q", source="s", order="paper")
    paper = {("a", "t1"): 0.2, ("b", "t1"): 0.3, ("a", "t2"): 0.8, ("b", "t2"): 0.9}
    rows = lambda ours: [
        {"model": model, "task": task, "x": 1, "values": [ours[model, task]], "paper": paper[model, task]}
        for model, task in paper
    ]
    assert judged(finding, rows(paper), "max") == HOLDS
    reversed_within = {("a", "t1"): 0.3, ("b", "t1"): 0.2, ("a", "t2"): 0.9, ("b", "t2"): 0.8}
    assert judged(finding, rows(reversed_within), "max") == DOES_NOT_HOLD  # across tasks it would agree


def test_a_rank_finding_holds_when_the_model_is_among_the_best_of_each_group():
    finding = Finding(quote="q", source="s", rank={"models": ["xlstm_1_0"], "top": 2, "by": "task"})
    rows = lambda values: [
        {"model": model, "task": task, "x": 1, "values": [value]} for (model, task), value in values.items()
    ]
    best = {("xlstm_1_0", "a"): 1.0, ("mamba", "a"): 2.0, ("rwkv4", "a"): 3.0}
    assert judged(finding, rows(best)) == HOLDS
    third = {
        ("xlstm_1_0", "a"): 3.0,
        ("mamba", "a"): 2.0,
        ("rwkv4", "a"): 1.0,
        ("xlstm_1_0", "b"): 1.0,
        ("mamba", "b"): 2.0,
        ("rwkv4", "b"): 3.0,
    }
    assert judged(finding, rows(third)) == PARTLY  # third in a, first in b
    assert judged(finding, rows({key: value for key, value in third.items() if key[1] == "a"})) == DOES_NOT_HOLD


def test_a_rank_over_seeds_holds_fully_only_where_every_run_keeps_the_place():
    finding = Finding(quote="q", source="s", rank={"models": ["xlstm_1_0"], "top": 2, "by": "task"})
    rows = lambda xlstm: [
        {"model": "xlstm_1_0", "task": "a", "x": 1, "values": xlstm},
        {"model": "mamba", "task": "a", "x": 1, "values": [0.60, 0.62]},
        {"model": "rwkv4", "task": "a", "x": 1, "values": [0.50, 0.52]},
        {"model": "llama", "task": "a", "x": 1, "values": [0.40, 0.42]},
    ]
    assert judged(finding, rows([0.55, 0.57]), "max") == HOLDS  # second, each run above RWKV-4's mean 0.51
    assert judged(finding, rows([0.50, 0.64]), "max") == PARTLY  # second by its mean 0.57, one run below 0.51
    assert judged(finding, rows([0.46, 0.48]), "max") == DOES_NOT_HOLD  # third, no run above RWKV-4's 0.51
    assert judged(finding, rows([0.44, 0.56]), "max") == PARTLY  # third by its mean 0.50, one run above 0.51
    checked = check(finding, cell_table(rows([0.50, 0.64])), context_of(cell_table(rows([0.5, 0.64])), "max"))
    assert checked.header[-1] == "its runs" and checked.rows[0][-1] == "0.500, 0.640"
    assert checked.summary.startswith("1 of the 1 places is among the best 2 cells by the cells' means; in 1 of")


def test_a_growth_finding_holds_for_the_papers_class_and_partly_for_its_side_of_linear():
    finding = Finding(quote="q", source="s", growth={"linear": ["mamba"], "quadratic": ["llama"]})
    rows = lambda llama: [
        *({"model": "mamba", "task": "gen", "x": x, "values": [0.01 * x]} for x in LENGTHS),
        *({"model": "llama", "task": "gen", "x": x, "values": [llama(x)]} for x in LENGTHS),
    ]
    assert judged(finding, rows(lambda x: 1e-5 * x * x)) == HOLDS
    assert judged(finding, rows(lambda x: x**1.3)) == PARTLY  # superlinear, not quadratic
    linear_everywhere = Finding(quote="q", source="s", growth={"quadratic": ["llama", "mamba"]})
    assert judged(linear_everywhere, rows(lambda x: 0.02 * x)) == DOES_NOT_HOLD


def test_a_change_finding_tells_keeping_from_rising():
    finding = Finding(quote="q", source="s", change={"keeps": ["xlstm_1_0"], "rises": ["llama"]})
    rows = lambda xlstm, llama: [
        {"model": "xlstm_1_0", "task": "lm", "x": 256, "values": [200.0]},
        {"model": "xlstm_1_0", "task": "lm", "x": 2048, "values": [xlstm]},
        {"model": "llama", "task": "lm", "x": 256, "values": [200.0]},
        {"model": "llama", "task": "lm", "x": 2048, "values": [llama]},
    ]
    assert judged(finding, rows(198.0, 260.0)) == HOLDS
    assert judged(finding, rows(198.0, 201.0)) == PARTLY
    assert judged(finding, rows(260.0, 190.0)) == DOES_NOT_HOLD


def test_a_beats_finding_holds_at_every_size_and_partly_at_some():
    finding = Finding(quote="q", source="s", beats={"xlstm_1_0": "mamba"})
    rows = lambda mamba: [
        *({"model": "xlstm_1_0", "task": "lm", "x": x, "values": [10.0]} for x in (1, 2)),
        *({"model": "mamba", "task": "lm", "x": x, "values": [value]} for x, value in zip((1, 2), mamba)),
    ]
    assert judged(finding, rows([11.0, 12.0])) == HOLDS
    assert judged(finding, rows([11.0, 9.0])) == PARTLY
    assert judged(finding, rows([9.0, 9.0])) == DOES_NOT_HOLD


def test_a_beats_finding_with_a_list_needs_the_model_better_than_each_of_them():
    finding = Finding(quote="q", source="s", beats={"xlstm_1_1": ["mamba", "rwkv5"]})
    rows = lambda rwkv5: [
        {"model": "xlstm_1_1", "task": "mqar", "x": 64, "values": [0.9]},
        {"model": "mamba", "task": "mqar", "x": 64, "values": [0.1]},
        {"model": "rwkv5", "task": "mqar", "x": 64, "values": [rwkv5]},
    ]
    assert judged(finding, rows(0.5), mode="max") == HOLDS
    assert judged(finding, rows(0.95), mode="max") == PARTLY  # better than Mamba, not than RWKV-5
    without_rwkv5 = [row for row in rows(0.5) if row["model"] != "rwkv5"]
    assert judged(finding, without_rwkv5, mode="max") == HOLDS  # the pair with a model the scale lacks is not judged
    with pytest.raises(ValueError, match="beats="):
        Finding(quote="q", source="s", beats={"xlstm_1_1": []})


def test_a_beats_finding_compares_every_cell_where_panels_repeat_the_x_values():
    finding = Finding(quote="q", source="s", beats={"xlstm_1_1": "mamba"})
    rows = [  # two panels (tasks) at the same x: Mamba better in the first, xLSTM[1:1] in the second
        {"model": "xlstm_1_1", "task": "kv4", "x": 64, "values": [0.2]},
        {"model": "mamba", "task": "kv4", "x": 64, "values": [0.3]},
        {"model": "xlstm_1_1", "task": "kv16", "x": 64, "values": [0.8]},
        {"model": "mamba", "task": "kv16", "x": 64, "values": [0.1]},
    ]
    table = cell_table(rows)
    checked = check(finding, table, context_of(table, "max"))
    assert checked.holds == PARTLY and checked.rows[0][2] == "1 of 2"  # both cells, not the last one per x
    assert "in every cell (task, x)" in checked.rule


def test_where_largest_selects_the_hardest_setting_of_the_scale():
    finding = Finding(quote="q", source="s", where={"x": "largest"}, beats={"xlstm_1_1": "mamba"})
    rows = [
        {"model": "xlstm_1_1", "task": "mqar", "x": 4, "values": [0.5]},
        {"model": "mamba", "task": "mqar", "x": 4, "values": [0.9]},
        {"model": "xlstm_1_1", "task": "mqar", "x": 16, "values": [0.8]},
        {"model": "mamba", "task": "mqar", "x": 16, "values": [0.1]},
    ]
    assert judged(finding, rows, mode="max") == HOLDS  # judged at x 16 only; at x 4 Mamba is better
    assert judged(Finding(quote="q", source="s", beats={"xlstm_1_1": "mamba"}), rows, mode="max") == PARTLY


def test_an_out_of_memory_finding_holds_when_the_model_runs_out_first():
    finding = Finding(quote="q", source="s", out_of_memory_first=["llama"])
    rows = lambda llama, rwkv: [
        *({"model": "llama", "task": "t", "x": x, "values": [1.0], "oom": float(x >= llama)} for x in (64, 128, 256)),
        *({"model": "rwkv4", "task": "t", "x": x, "values": [1.0], "oom": float(x >= rwkv)} for x in (64, 128, 256)),
    ]
    assert judged(finding, rows(128, 512), out_of_memory="oom") == HOLDS
    assert judged(finding, rows(256, 256), out_of_memory="oom") == PARTLY
    assert judged(finding, rows(256, 128), out_of_memory="oom") == DOES_NOT_HOLD


def test_the_pages_verdict_is_yes_only_when_every_judged_finding_holds():
    assert verdict([HOLDS, NOT_MEASURED]) == "Yes"
    assert verdict([HOLDS, PARTLY]) == "Partly"
    assert verdict([HOLDS, DOES_NOT_HOLD]) == "Partly"
    assert verdict([DOES_NOT_HOLD]) == "No"
    assert verdict([NOT_MEASURED]) == "Not measured"


def test_the_best_of_a_lines_report_with_rows_is_named_per_row_panel_and_x():
    from experiments.config.artifacts import load_artifact
    from experiments.reports.scale_statements import scale_statements

    artifact = load_artifact("mqar-app-big").at_scale("mini")
    rows = [  # xLSTM[1:0] best at CL 32, RWKV-5 at CL 64, in the one panel and x
        {"model": model, "task.context_length": length, "task.num_kv_pairs": 4, "model.embedding_dim": 64,
         "values": [value], "solved": 0}
        for model, length, value in [("xlstm_1_0", 32, 0.9), ("rwkv5", 32, 0.5), ("xlstm_1_0", 64, 0.4),
                                     ("rwkv5", 64, 0.6)]
    ]  # fmt: skip
    table = cell_table(rows)
    names = pd.Series([f"{row['model']} {row['task.context_length']}" for row in rows], index=table.index)
    context = CheckContext(cells=artifact.report["cells"], metric="val/accuracy", mode="max",
                           x="model.embedding_dim", names=names)  # fmt: skip
    [best] = [line for line in scale_statements(artifact, table, names, "mini", context) if line.startswith("Best")]
    assert "context_length=32 num_kv_pairs=4 embedding_dim=64: xLSTM[1:0] (0.9" in best
    assert "context_length=64 num_kv_pairs=4 embedding_dim=64: RWKV-5 (0.6" in best
