"""One run, one id, wherever it runs (experiments.config.run_identity): the processes, nodes, micro-batch, threads,
FSDP sharding and checkpoint interval leave a run's id unchanged, what it computes changes it, and a run started on
one process resumes on two."""

import hashlib
import subprocess
import sys

import pytest
import torch
from omegaconf import OmegaConf

from experiments.config.artifacts import run_id_of
from experiments.config.configuration import compose_run_config, config_yaml
from experiments.training.checkpoints import resumed_config_yaml
from experiments.training.train import run_training

BASE = ["model=xlstm_1_0", "task=parity", "trainer.accelerator=gpu", "trainer.precision=bf16-mixed"]
PLACEMENTS = [
    ["trainer.devices=2", "trainer.strategy=ddp"],
    ["trainer.devices=8", "+trainer.num_nodes=8", "+trainer.micro_batch_size=2"],
    ["trainer.devices=4", "trainer.strategy=ddp_spawn", "+trainer.micro_batch_size=16"],
    ["trainer.num_threads=2", "+trainer.checkpoint_every_steps=100"],
    ["trainer.strategy=fsdp", "+trainer.fsdp_sharding=NO_SHARD"],
]
COMPUTATIONS = [
    ["seed=1"],
    ["optim.lr=3.7e-3"],
    ["trainer.precision=32-true"],
    ["trainer.batch_size=96"],
    ["trainer.accelerator=cpu"],
    ["trainer.strategy=fsdp"],
    ["model.embedding_dim=96"],
]
# Table 1's recipe on the sample corpus, three steps of a global batch of 4 (as tests/experiments/training/test_distributed.py)
TINY_LM = [
    "model=xlstm_1_0",
    "task=lm_sample",
    "optim=adamw_lm",
    "optim.warmup_steps=1",
    "trainer.max_steps=3",
    "trainer.val_every_steps=1",
    "trainer.batch_size=4",
    "task.context_length=16",
    "task.val_sequences=4",
    "task.test_sequences=4",
    "model.embedding_dim=16",
    "model.num_blocks=1",
    "trainer.num_threads=1",
    "trainer.accelerator=cpu",
]


def run_id(overrides: list[str]) -> str:
    return run_id_of(compose_run_config(overrides))


def test_one_id_for_the_same_run_on_one_or_many_processes_and_nodes():
    single = run_id(BASE)
    for placement in PLACEMENTS:
        on_fsdp = "trainer.strategy=fsdp" in placement
        expected = run_id([*BASE, "trainer.strategy=fsdp"]) if on_fsdp else single
        assert run_id([*BASE, *placement]) == expected, placement


def test_what_a_run_computes_changes_its_id():
    ids = {run_id([*BASE, *change]) for change in COMPUTATIONS}
    assert len(ids) == len(COMPUTATIONS) and run_id(BASE) not in ids


def test_a_run_at_the_default_placement_keeps_the_id_it_had_before_the_rule():
    """Every committed run was planned at the default placement: its id is still the hash of its whole config."""
    config = compose_run_config(BASE)
    assert run_id_of(config) == hashlib.sha256(config_yaml(config).encode()).hexdigest()[:12]


def test_a_checkpoint_of_the_run_on_one_process_is_resumable_on_sixty_four():
    """A checkpoint stores what its run computes (resumed_config_yaml), which placement does not change."""
    one = compose_run_config(BASE)
    many = compose_run_config([*BASE, "trainer.devices=8", "+trainer.num_nodes=8", "trainer.strategy=ddp"])
    assert resumed_config_yaml(one) == resumed_config_yaml(many)
    assert resumed_config_yaml(one) != resumed_config_yaml(compose_run_config([*BASE, "seed=1"]))


@pytest.mark.slow
def test_a_run_stopped_on_one_process_resumes_on_two_and_ends_as_if_uninterrupted(tmp_path):
    with pytest.raises(RuntimeError, match="failing on purpose"):
        run_training(compose_run_config([*TINY_LM, "debug.fail_after_steps=2"]), tmp_path / "run")
    config = compose_run_config([*TINY_LM, "trainer.devices=2", "trainer.strategy=ddp"])
    OmegaConf.save(config, tmp_path / "ddp.yaml")
    finished = subprocess.run(
        [sys.executable, "-m", "tests.distributed_run", str(tmp_path / "ddp.yaml"), str(tmp_path / "run")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert finished.returncode == 0, finished.stderr[-4000:]
    assert "resuming" in finished.stdout and "from step 0" not in finished.stdout
    run_training(compose_run_config(TINY_LM), tmp_path / "whole")
    resumed, whole = (
        torch.load(tmp_path / run / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False)
        for run in ("run", "whole")
    )
    assert resumed["global_step"] == whole["global_step"] == 3
    for name, tensor in whole["state_dict"].items():
        torch.testing.assert_close(resumed["state_dict"][name], tensor, rtol=1e-5, atol=1e-6, msg=name)
