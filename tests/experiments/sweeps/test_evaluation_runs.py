"""Evaluation-only artifacts (``evaluates``): each run loads a finished training run's checkpoint from the run store
and evaluates it on other task settings, with no training; an evaluation run whose training run is missing waits
(neither run nor failed) and the sweep names the command that makes it."""

import json
import os
import shlex

import pytest
from omegaconf import OmegaConf
from rich.console import Console

from experiments.cli import main
from experiments.config.artifacts import load_artifact
from experiments.config.configuration import compose_run_config
from experiments.sweeps.sweep import run_sweep

TRAINING = """\
artifact: recall-train
grid:
  model: [llama, mamba_tied]
  task: [mqar]
  task.context_length: [16]
  optim.lr: [1.0e-3, 1.0e-2]
  seed: [0]
overrides: [model.num_blocks=1, model.embedding_dim=16, trainer.max_steps=3, trainer.val_every_steps=3,
            trainer.batch_size=4, task.vocab_size=32, task.num_kv_pairs=2, task.train_samples=16, task.val_samples=8,
            task.test_samples=8]
selection: {metric: val/accuracy, mode: max, choose: [optim.lr], average: [seed]}
report: {kind: table, cells: [model], metric: val/accuracy}
scales: {smoke: {}}
"""
EVALUATION = """\
artifact: recall-longer
evaluates:
  artifact: recall-train
  where: {model: llama}
grid:
  task.context_length: [32, 64]   # 64 > V = 32: MQAR needs only KV <= V // 2 - 1 distinct keys
overrides: [task.val_samples=8]
selection: {metric: trained/val/accuracy, mode: max, choose: [optim.lr], average: [seed]}
report: {kind: table, cells: [model, task.context_length], metric: val/accuracy}
scales: {smoke: {}}
"""


@pytest.fixture
def artifacts(tmp_path, monkeypatch):
    folder = tmp_path / "artifacts"
    folder.mkdir()
    (folder / "recall-train.yaml").write_text(TRAINING)
    (folder / "recall-longer.yaml").write_text(EVALUATION)
    monkeypatch.setenv("XLSTM_SUITE_ARTIFACTS", os.pathsep.join([os.environ["XLSTM_SUITE_ARTIFACTS"], str(folder)]))
    return tmp_path


def test_evaluation_runs_pair_each_matching_training_run_with_each_cell_of_the_grid(artifacts):
    training = {run.run_id: run for run in load_artifact("recall-train").runs("smoke")}
    runs = load_artifact("recall-longer").runs("smoke")
    assert len(runs) == 2 * 2  # the two llama learning rates x two context lengths
    for run in runs:
        trained = training[run.trained_by.run_id]
        assert trained.cell["model"] == "llama" and run.cell == trained.cell | {
            "task.context_length": run.cell["task.context_length"]
        }
        assert OmegaConf.to_container(run.config.evaluate) == {
            "artifact": "recall-train",
            "scale": "smoke",
            "run_id": trained.run_id,
            "checkpoint": "best",
            "cell": trained.label,
        }
        assert run.config.model == trained.config.model and run.config.task.val_samples == 8
        assert run.config == compose_run_config(run.overrides)  # the shared compose gives the full compose's config
    assert len({run.run_id for run in runs}) == 4


def test_bad_evaluates_sections_are_named(artifacts):
    folder = artifacts / "artifacts"
    (folder / "recall-longer.yaml").write_text(EVALUATION.replace("artifact: recall-train", "artifact: recall-trian"))
    with pytest.raises(ValueError, match="evaluates: artifact='recall-trian' is not an artifact"):
        load_artifact("recall-longer")
    (folder / "recall-longer.yaml").write_text(EVALUATION.replace("{model: llama}", "{model: lama}"))
    with pytest.raises(ValueError, match="evaluates.where: no cell has model=lama"):
        load_artifact("recall-longer").runs("smoke")


def test_the_command_named_for_missing_training_runs_carries_the_users_overrides_and_makes_only_those(
    artifacts, capsys
):
    root, overrides = artifacts / "runs", ["trainer.max_steps=2", "task.test_samples=4"]
    run_sweep("recall-longer", "smoke", root=root, console=Console(width=400), dry_run=True, overrides=overrides)
    command = "xlstm-suite sweep recall-train --scale smoke trainer.max_steps=2 task.test_samples=4 --where model=llama"
    assert f"make those with `{command}`" in capsys.readouterr().out
    assert run_sweep("recall-longer", "smoke", root=root, console=Console(width=400), overrides=overrides) == 0
    output = capsys.readouterr().out
    assert f"make them with `{command}`" in output and output.count("xlstm-suite sweep") == 1
    assert not (root / "smoke" / "recall-longer").exists()

    # the named command plans exactly the training runs the evaluation runs wait for
    assert main(shlex.split(command)[1:] + ["--dry-run", "--verbose", "--root", str(root)]) == 0
    listed = capsys.readouterr().out
    waited_for = {run.trained_by.run_id for run in load_artifact("recall-longer").runs("smoke", overrides)}
    planned = load_artifact("recall-train").runs("smoke", overrides)
    assert len(waited_for) == 2 and "2 runs: done 0, pending 2" in listed
    assert all((run.run_id in listed) == (run.run_id in waited_for) for run in planned)


@pytest.mark.slow  # trains two tiny runs and evaluates four (about 30 s on an idle core)
def test_an_evaluation_run_waits_until_its_training_run_is_done_then_evaluates_its_checkpoint(artifacts, capsys):
    root = artifacts / "runs"
    console = Console(width=400)
    run_sweep("recall-longer", "smoke", root=root, console=console, dry_run=True)
    listing = capsys.readouterr().out
    assert "2 training runs, 2 of them not done" in listing and listing.count("<- recall-train (smoke)") == 4

    assert run_sweep("recall-longer", "smoke", root=root, console=console) == 0  # nothing failed
    output = capsys.readouterr().out
    run = load_artifact("recall-longer").runs("smoke")[0]
    assert (
        f"training run {run.trained_by.run_id} of recall-train (smoke scale; cell {run.trained_by.label}) is not "
        "finished" in output
    )
    assert (
        "4 evaluation runs wait for 2 training runs: make them with `xlstm-suite sweep recall-train --scale "
        "smoke --where model=llama`, then rerun this sweep" in output
    )
    assert not (root / "smoke" / "recall-longer").exists()  # neither run nor failed

    assert run_sweep("recall-train", "smoke", root=root, console=console) == 0
    assert run_sweep("recall-longer", "smoke", root=root, console=console) == 0
    for run in load_artifact("recall-longer").runs("smoke"):
        result = json.loads((root / "smoke" / "recall-longer" / run.run_id / "result.json").read_text())
        trained = json.loads((root / "smoke" / "recall-train" / run.trained_by.run_id / "result.json").read_text())
        assert result["metrics"]["train/steps"] == 0 and 0 <= result["metrics"]["val/accuracy"] <= 1
        assert result["metrics"]["trained/val/accuracy"] == trained["metrics"]["val/accuracy"]
        assert not (root / "smoke" / "recall-longer" / run.run_id / "checkpoints").exists()
