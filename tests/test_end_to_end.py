"""A real (tiny) sweep through training and the report, and config errors caught before anything is written."""

import json
import time

import pandas as pd
import pytest

from experiments.cli import main as cli_main
from experiments.config.artifacts import load_artifact
from experiments.config.configuration import ConfigError, compose_run_config
from experiments.reports.report import write_report
from experiments.sweeps.sweep import run_sweep
from experiments.training.train import run_training
from tests.sweep_fakes import small_artifact

TINY = [
    "trainer.max_steps=4",
    "trainer.batch_size=4",
    "trainer.val_every_steps=2",
    "model.embedding_dim=16",
    "task.val_samples=8",
    "task.test_samples=8",
    "task.eval_max_length=48",
    "trainer.num_threads=1",
]


@pytest.mark.slow  # minutes of the default suite's 10 (make test-slow)
def test_sweep_trains_records_and_reports(tmp_path):
    artifact = small_artifact(["xlstm_0_1", "xlstm_1_0"], tasks=["parity"])
    runs, reports = tmp_path / "runs", tmp_path / "reports"
    assert run_sweep(artifact, "smoke", jobs=1, overrides=TINY, root=runs) == 0
    results = sorted(runs.glob("smoke/sweep-fixture/*/result.json"))
    assert len(results) == 2
    for result in results:
        run_dir = result.parent
        assert (run_dir / "config.yaml").exists() and (run_dir / "metrics.csv").exists()
        assert "val/scaled_accuracy" in pd.read_csv(run_dir / "metrics.csv").columns
    # the report plans the fixture's full smoke grid: the two runs done, the other cells marked missing
    outcome = write_report("sweep-fixture", "smoke", runs, reports, extra_overrides=TINY)
    assert outcome.status == "written"
    assert sorted(path.name.split(".", 1)[1] for path in outcome.paths) == ["csv", "md", "pdf", "png", "runs.csv"]
    stem = outcome.paths[0].stem
    assert stem.startswith("sweep-fixture-")  # an ablation's report does not overwrite the artifact's
    table = pd.read_csv(reports / "smoke" / f"{stem}.csv")
    assert list(table.columns) == [
        "model",
        "task",
        "metric",
        "ours",
        "sample std",
        "min",
        "max",
        "paper",
        "runs",
        "solved",
        "note",
    ]
    done = table[table["runs"] > 0]
    assert sorted(done["model"]) == ["xlstm_0_1", "xlstm_1_0"] and (done["task"] == "parity").all()
    missing = table[table["runs"] == 0]
    assert len(missing) == 4 and missing["ours"].isna().all()
    assert missing["note"].str.contains("1 of 1 runs missing").all()
    assert f"![sweep-fixture]({stem}.png)" in (reports / "smoke" / f"{stem}.md").read_text()


@pytest.mark.parametrize(
    "override, message",
    [
        ("+model.options.mlstm.num_heads=5", "mlstm.num_heads=5"),
        ("model.embedding_dim=30", "divisible by slstm.num_heads=4"),
        ("task.eval_min_length=1", "eval_min_length=1"),
        ("optim.lrr=1", "optim.lrr"),
    ],
)
def test_inconsistent_configs_fail_fast_and_write_nothing(tmp_path, override, message):
    started = time.perf_counter()
    with pytest.raises(ConfigError, match=message):
        run_sweep(load_artifact("sweep-fixture"), "smoke", overrides=[override], root=tmp_path)
    print(f"rejected in {time.perf_counter() - started:.2f} s")
    assert not any(tmp_path.iterdir())


def test_tensorboard_logger_is_selectable(tmp_path):
    pytest.importorskip("tensorboard")
    config = compose_run_config(
        ["model=xlstm_1_0", "task=parity", "trainer.logger=tensorboard", "trainer.checkpoint=false", *TINY]
    )
    metrics = run_training(config, tmp_path)
    assert 0 <= metrics["test/accuracy"] <= 1
    assert list(tmp_path.rglob("events.out.tfevents.*"))


def test_train_records_a_run_and_a_rerun_prints_its_stored_metrics_without_training(tmp_path, capsys):
    command = ["train", "model=xlstm_1_0", "task=parity", *TINY, "--root", str(tmp_path)]
    assert cli_main(command) == 0
    first = capsys.readouterr().out
    [result] = tmp_path.glob("adhoc/adhoc/*/result.json")
    assert f"wrote {result}" in first and "step 4/4 (100%)" in first
    assert first.splitlines()[0] == f"training {result.parent}"  # where the run goes, before any training output
    stored = json.loads(result.read_text())["metrics"]
    assert cli_main(command) == 0
    rerun = capsys.readouterr().out
    assert "already done" in rerun and "step " not in rerun  # nothing trained
    assert f"'test/scaled_accuracy': {round(stored['test/scaled_accuracy'], 4)}" in rerun
    assert json.loads(result.read_text())["metrics"] == stored
