"""SLURM's requeue signal in training (experiments.training.requeue): noted whenever it arrives, acted on at the next
boundary (an optimizer step's end, or a validation's), where the run saves last.ckpt and stops; the next attempt
resumes from it and ends as the run would have uninterrupted. (tests/experiments/sweeps/test_slurm.py: the same through SLURM jobs of two
processes.)"""

import os
import signal

import pytest
import torch

from experiments.config.configuration import compose_run_config
from experiments.stop_signals import REQUEUE_SIGNAL, Stopped, requeue_requested, stop_signals_raise
from experiments.training.train import run_training

TINY = [
    "model=xlstm_1_0",
    "task=parity",
    "model.embedding_dim=16",
    "model.num_blocks=1",
    "trainer.batch_size=4",
    "trainer.num_threads=1",
    "trainer.accelerator=cpu",
    "trainer.max_steps=4",
    "task.val_samples=8",
    "task.test_samples=8",
]
SLURM_TASK = {
    "SLURM_JOB_ID": "4321",
    "SLURM_JOB_NAME": "test",
    "SLURM_NTASKS": "1",
    "SLURM_NTASKS_PER_NODE": "1",
    "SLURM_NNODES": "1",
    "SLURM_PROCID": "0",
    "SLURM_LOCALID": "0",
    "SLURM_NODEID": "0",
    "SLURM_NODELIST": "localhost",
}


@pytest.mark.parametrize(
    "val_every_steps, stopped_at",
    [
        (2, 1),  # the end of step 1, no validation due
        pytest.param(1, 1, marks=pytest.mark.slow),  # a validation after every step: the end of the first one
    ],
)
def test_a_run_signalled_to_requeue_saves_at_the_next_boundary_and_its_next_attempt_ends_as_uninterrupted(
    tmp_path, monkeypatch, val_every_steps, stopped_at
):
    for name, value in SLURM_TASK.items():
        monkeypatch.setenv(name, value)
    config = compose_run_config([*TINY, f"trainer.val_every_steps={val_every_steps}"])
    with stop_signals_raise():
        os.kill(os.getpid(), REQUEUE_SIGNAL)  # before training: while the data is prepared
        assert requeue_requested()
        with pytest.raises(Stopped) as stopped:
            run_training(config, tmp_path / "run")
    assert stopped.value.requeues and not requeue_requested()
    last = torch.load(tmp_path / "run" / "checkpoints" / "last.ckpt", weights_only=False)
    assert last["global_step"] == stopped_at
    resumed = run_training(config, tmp_path / "run")  # the requeued attempt
    uninterrupted = run_training(config, tmp_path / "uninterrupted")
    for name, value in uninterrupted.items():
        if not name.endswith("seconds"):
            assert resumed[name] == pytest.approx(value, rel=1e-6), name


def test_outside_slurm_the_requeue_signal_is_not_handled(monkeypatch):
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    with stop_signals_raise():
        assert signal.getsignal(REQUEUE_SIGNAL) in (signal.SIG_DFL, None)
    monkeypatch.setenv("SLURM_JOB_ID", "1")
    with stop_signals_raise():
        assert callable(signal.getsignal(REQUEUE_SIGNAL))
