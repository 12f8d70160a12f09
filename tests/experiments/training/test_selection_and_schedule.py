"""The paper's selection rule (best lr on validation, mean over seeds) and the warm-up + cosine schedule."""

import math

import numpy as np
import pandas as pd
import pytest

from experiments.reports.selection import select_cells
from experiments.training.schedules import warmup_cosine_factor


def _runs():
    rows = []
    # lr 1e-3 is better on validation on average over seeds, though seed 1 of lr 1e-2 is the single best run
    for lr, seed, val, test in [
        (1e-2, 0, 0.10, 0.15),
        (1e-2, 1, 0.95, 0.90),
        (1e-3, 0, 0.60, 0.70),
        (1e-3, 1, 0.70, 0.80),
    ]:
        rows.append({"model": "m", "task": "parity", "optim.lr": lr, "seed": seed, "val": val, "test": test})
    rows.append({"model": "m", "task": "even_pairs", "optim.lr": 1e-2, "seed": 0, "val": 0.2, "test": 0.3})
    return pd.DataFrame(rows)


def test_selection_picks_the_lr_with_best_mean_validation_and_averages_its_seeds():
    table = select_cells(
        _runs(),
        cells=["model", "task"],
        choose=["optim.lr"],
        average=["seed"],
        select_metric="val",
        mode="max",
        report_metric="test",
    )
    parity = table.set_index("task").loc["parity"]
    assert parity["chosen optim.lr"] == 1e-3
    assert parity["ours"] == pytest.approx(0.75)
    assert parity["runs"] == 2
    assert parity["std"] == pytest.approx(np.std([0.70, 0.80], ddof=1))  # the sample std of the seeds' values
    assert (parity["min"], parity["max"]) == (0.70, 0.80) and pd.isna(parity["solved"])  # no threshold given
    solved = select_cells(
        _runs(),
        cells=["model", "task"],
        choose=["optim.lr"],
        average=["seed"],
        select_metric="val",
        mode="max",
        report_metric="test",
        solved_at=0.75,
    )
    assert list(solved["solved"]) == [1, 0]  # of the chosen lr's runs (0.70, 0.80), and of even_pairs' (0.3)
    even_pairs = table.set_index("task").loc["even_pairs"]
    assert even_pairs["ours"] == pytest.approx(0.3) and even_pairs["runs"] == 1


def test_selection_mode_min_and_bad_mode():
    table = select_cells(
        _runs(),
        cells=["model", "task"],
        choose=["optim.lr"],
        average=["seed"],
        select_metric="val",
        mode="min",
        report_metric="test",
    )
    assert table.set_index("task").loc["parity", "chosen optim.lr"] == 1e-2
    with pytest.raises(ValueError, match="'best'.*'max', 'min'"):
        select_cells(
            _runs(), cells=["model"], choose=[], average=[], select_metric="val", mode="best", report_metric="test"
        )


def test_warmup_then_cosine_to_the_floor():
    kwargs = dict(max_steps=100, warmup_steps=10, min_lr_ratio=0.01)
    assert warmup_cosine_factor(0, **kwargs) == pytest.approx(0.1)
    assert warmup_cosine_factor(9, **kwargs) == pytest.approx(1.0)
    assert warmup_cosine_factor(10, **kwargs) == pytest.approx(1.0)
    midway = 0.01 + 0.99 * 0.5 * (1 + math.cos(math.pi * 0.5))
    assert warmup_cosine_factor(55, **kwargs) == pytest.approx(midway)
    assert warmup_cosine_factor(100, **kwargs) == pytest.approx(0.01)
    assert warmup_cosine_factor(500, **kwargs) == pytest.approx(0.01)
    factors = [warmup_cosine_factor(s, **kwargs) for s in range(10, 101)]
    assert all(a >= b for a, b in zip(factors, factors[1:]))
