"""A run whose training loss turns non-finite (the paper's NaN of Table ablstudies) is recorded as diverged: it stops
at that step, its result says so and holds the NaN metrics of the weights it diverged to, the sweep goes on and
succeeds, and the report's note names the divergence."""

import math

import pandas as pd
import pytest
from rich.console import Console

from experiments.config.artifacts import load_artifact
from experiments.reports.report import write_report
from experiments.sweeps.run_store import read_result
from experiments.sweeps.sweep import run_sweep

ARTIFACT, DIVERGING = "spaj15b_model_results", ["optim.lr=1e30"]  # its smoke scale: 4 steps of two tiny models


@pytest.mark.slow  # minutes of the default suite's 10 (make test-slow)
def test_a_run_whose_loss_turns_nan_is_recorded_as_diverged_and_the_sweep_goes_on(tmp_path):
    runs, reports = tmp_path / "runs", tmp_path / "reports"
    console = Console(record=True, width=200)
    assert run_sweep(ARTIFACT, "smoke", jobs=1, root=runs, overrides=DIVERGING, console=console) == 0
    planned = load_artifact(ARTIFACT).runs("smoke", DIVERGING)
    for run in planned:
        result = read_result(runs, "smoke", ARTIFACT, run.run_id)
        assert result is not None, f"{run.label}: not recorded as done"
        metrics = result["metrics"]
        assert metrics["train/diverged"] == 1.0 and metrics["train/steps"] < run.config.trainer.max_steps
        assert metrics["train/diverged_at_step"] == metrics["train/steps"]
        assert math.isnan(metrics["val/perplexity"]) and math.isnan(metrics["test/perplexity"])
    summary = console.export_text()
    assert summary.count("diverged: non-finite training loss at step") == len(planned), summary
    outcome = write_report(ARTIFACT, "smoke", runs, reports, DIVERGING)
    assert outcome.status == "written", outcome.message
    table = pd.read_csv(next((reports / "smoke").glob(f"{ARTIFACT}-*.csv")))
    assert table["ours"].isna().all() and (table["runs"] == 1).all()
    assert table["note"].str.fullmatch(r"1 of 1 runs diverged \(non-finite training loss\)").all(), table["note"]


@pytest.mark.slow  # 12 s: a smoke sweep; the diverging run's test above runs by default
def test_a_run_that_trains_normally_is_not_marked_diverged(tmp_path):
    runs = tmp_path / "runs"
    assert run_sweep(ARTIFACT, "smoke", jobs=1, root=runs) == 0
    for run in load_artifact(ARTIFACT).runs("smoke"):
        metrics = read_result(runs, "smoke", ARTIFACT, run.run_id)["metrics"]
        assert "train/diverged" not in metrics and math.isfinite(metrics["val/perplexity"])
