"""benchmarks.training_parity without training (a fake train function): its cache of finished runs and its report."""

import pytest

from benchmarks import training_parity as parity

# test scaled accuracy by backbone and seed: ours all below the official runs (no overlap)
SEPARATED = {"ours": [0.1, 0.2, 0.3, 0.4, 0.5], "official": [0.6, 0.7, 0.8, 0.9, 1.0]}


def parity_check(tmp_path, seeds: list[int], steps: int = 10) -> parity.ParityCheck:
    return parity.ParityCheck(
        models=["xlstm_0_1"], task="parity", seeds=seeds, steps=steps, cache=tmp_path / "parity.runs.csv"
    )


def fake_train(calls: list, accuracies: dict[str, list[float]] = SEPARATED) -> parity.Train:
    def train(backbone, config):
        calls.append((backbone, config.seed, config.trainer.max_steps))
        accuracy = accuracies[backbone][config.seed]
        return {parity.METRIC: accuracy, parity.VALIDATION_METRIC: accuracy - 0.01}

    return train


def run(check: parity.ParityCheck, calls: list) -> list:
    runs = parity.planned_runs(check)
    parity.run_missing(runs, check.cache, fake_train(calls))
    return runs


def test_a_rerun_trains_only_the_runs_missing_from_the_cache(tmp_path, capsys):
    calls = []
    run(parity_check(tmp_path, seeds=[0]), calls)
    run(parity_check(tmp_path, seeds=[0, 1]), calls)
    run(parity_check(tmp_path, seeds=[0], steps=20), calls)  # another budget is another config
    assert calls == [
        ("ours", 0, 10),
        ("official", 0, 10),
        ("ours", 1, 10),
        ("official", 1, 10),
        ("ours", 0, 20),
        ("official", 0, 20),
    ]
    assert "[1/4] ours model=xlstm_0_1 task=parity optim.lr=0.01 seed=0 steps=10: cached" in capsys.readouterr().out
    table = parity.read_cache(tmp_path / "parity.runs.csv")
    assert list(table.columns) == parity.COLUMNS and len(table) == 6 and table["config_hash"].is_unique
    official = table[(table["backbone"] == "official") & (table["seed"] == 1)].iloc[0]
    assert (official["model"], official["task"], official["steps"]) == ("xlstm_0_1", "parity", 10)
    assert official[parity.METRIC] == 0.7 and official[parity.VALIDATION_METRIC] == pytest.approx(0.69)


def test_the_report_gives_both_distributions_and_the_rank_test(tmp_path):
    check = parity_check(tmp_path, seeds=[0, 1, 2, 3, 4])
    runs = run(check, [])
    report = parity.report_markdown(check, runs, parity.read_cache(check.cache), {"xlstm_0_1": ["- parameters: 1"]})
    assert "formal-main mini cells, task parity, 10 steps, seeds 0, 1, 2, 3, 4;" in report
    assert "test/scaled_accuracy of the checkpoint with the best val/scaled_accuracy" in report
    assert "| ours | 5 | 0.100, 0.200, 0.300, 0.400, 0.500 | 0.300 | 0.158 | 0.100 to 0.500 | 0 of 5 |" in report
    assert "| official | 5 | 0.600, 0.700, 0.800, 0.900, 1.000 | 0.800 | 0.158 | 0.600 to 1.000 | 2 of 5 |" in report
    assert "Mann-Whitney U = 0, two-sided p = 0.0079 (the smallest p 5 and 5 runs allow: 0.0079)" in report
    assert "distinguishable at 1%: yes" in report and "missing" not in report


def test_overlapping_runs_are_not_distinguishable_and_missing_runs_are_counted(tmp_path):
    same = {"ours": [0.2, 0.9], "official": [0.9, 0.2]}
    parity.run_missing(
        parity.planned_runs(parity_check(tmp_path, seeds=[0, 1])), tmp_path / "parity.runs.csv", fake_train([], same)
    )
    check = parity_check(tmp_path, seeds=[0, 1, 2])
    report = parity.report_markdown(
        check, parity.planned_runs(check), parity.read_cache(check.cache), {"xlstm_0_1": []}
    )
    assert "**2 of 6 runs are missing from the cache.**" in report
    assert "two-sided p = 1.0000" in report and "distinguishable at 1%: no" in report


def test_the_report_goes_beside_the_cache(tmp_path):
    assert parity_check(tmp_path, seeds=[0]).report_path == tmp_path / "parity.md"
    assert parity.CACHE.name == "training_parity.runs.csv"
