"""Evaluation under data-parallel training scores every validation and test sample exactly once
(tasks.evaluation_loader): Lightning's DistributedSampler would pad an uneven set with repeated samples."""

import subprocess
import sys
from types import SimpleNamespace

import pandas as pd
import pytest
from omegaconf import OmegaConf

from experiments.config.configuration import compose_run_config
from experiments.training.train import run_training
from tasks.evaluation_loader import evaluation_loader

# Table 1's recipe on the sample corpus: 5 validation and 7 test sequences, which two processes cannot split evenly
UNEVEN_LM = [
    "model=xlstm_1_0",
    "task=lm_sample",
    "optim=adamw_lm",
    "optim.warmup_steps=1",
    "trainer.max_steps=2",
    "trainer.val_every_steps=1",
    "trainer.batch_size=4",
    "task.context_length=16",
    "task.val_sequences=5",
    "task.test_sequences=7",
    "model.embedding_dim=16",
    "model.num_blocks=1",
    "trainer.num_threads=1",
    "trainer.accelerator=cpu",
]
# associative recall (a fixed set cut into batches of 4): 9 validation samples in 3 batches, 5 test samples in 2
UNEVEN_MQAR = [
    "model=llama",
    "task=mqar",
    "trainer.max_steps=2",
    "trainer.val_every_steps=2",
    "trainer.batch_size=4",
    "trainer.num_threads=1",
    "trainer.accelerator=cpu",
    "model.embedding_dim=16",
    "task.vocab_size=64",
    "task.context_length=32",
    "task.num_kv_pairs=4",
    "task.train_samples=16",
    "task.val_samples=9",
    "task.test_samples=5",
]


def datamodule_of(world_size: int, rank: int) -> SimpleNamespace:
    return SimpleNamespace(trainer=SimpleNamespace(world_size=world_size, global_rank=rank))


@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_each_item_goes_to_exactly_one_process(world_size):
    items = [f"batch {index}" for index in range(7)]
    shares = [list(evaluation_loader(datamodule_of(world_size, rank), items)) for rank in range(world_size)]
    assert sorted(item for share in shares for item in share) == sorted(items)
    assert max(map(len, shares)) - min(map(len, shares)) <= 1


def test_a_set_smaller_than_the_processes_is_refused_with_the_numbers():
    with pytest.raises(
        ValueError, match="an evaluation set of 3 sequences cannot give each of 4 processes one; valid: at least 4"
    ):
        evaluation_loader(datamodule_of(4, 0), list(range(3)), batch_size=2)


def evaluation_metrics(run_dir) -> pd.Series:
    """The last validation and the test metrics of a run, from its metrics.csv."""
    logged = pd.read_csv(run_dir / "metrics.csv")
    return pd.concat(
        [
            logged.filter(regex="^val/").dropna(how="all").iloc[-1],
            logged.filter(regex="^test/").dropna(how="all").iloc[-1],
        ]
    )


def evaluate_in_one_and_two_processes(overrides: list[str], tmp_path) -> tuple[pd.Series, pd.Series]:
    """The metrics of the same run on one process and on two (gloo DDP, ranks started as a SLURM job's tasks are)."""
    run_training(compose_run_config(overrides), tmp_path / "one")
    OmegaConf.save(compose_run_config([*overrides, "trainer.devices=2", "trainer.strategy=ddp"]), tmp_path / "ddp.yaml")
    finished = subprocess.run(
        [sys.executable, "-m", "tests.distributed_run", str(tmp_path / "ddp.yaml"), str(tmp_path / "two")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert finished.returncode == 0, finished.stderr[-4000:]
    return evaluation_metrics(tmp_path / "one"), evaluation_metrics(tmp_path / "two")


@pytest.mark.slow  # minutes of the default suite's 10 (make test-slow)
def test_two_processes_score_an_uneven_language_model_set_as_one(tmp_path):
    one, two = evaluate_in_one_and_two_processes(UNEVEN_LM, tmp_path)
    assert {"val/loss", "test/loss"} <= set(one.index)
    pd.testing.assert_series_equal(two, one, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_two_processes_score_uneven_batches_of_a_fixed_set_as_one(tmp_path):
    one, two = evaluate_in_one_and_two_processes(UNEVEN_MQAR, tmp_path)
    assert {"val/accuracy", "test/accuracy"} <= set(one.index)
    pd.testing.assert_series_equal(two, one, rtol=1e-5, atol=1e-6)
