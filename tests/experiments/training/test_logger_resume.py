"""A resumed run's loggers continue the killed attempt's record (experiments.training.train._logger): TensorBoard
shows each step once, with an uninterrupted run's values, and W&B resumes the run under the run's own id."""

import pytest
from lightning.pytorch import loggers

from experiments.config.configuration import compose_run_config
from experiments.training.train import _logger, run_training

event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")

# 8 steps validated every 2; the first attempt fails after 5, so it logged steps that the resumed one redoes
TINY = [
    "model=xlstm_1_0",
    "task=parity",
    "trainer.max_steps=8",
    "trainer.val_every_steps=2",
    "trainer.batch_size=4",
    "model.embedding_dim=16",
    "task.val_samples=8",
    "task.test_samples=8",
    "task.eval_max_length=48",
    "trainer.num_threads=1",
    "trainer.logger=tensorboard",
]


def scalars(run_dir, tag: str) -> list[tuple[int, float]]:
    """The (step, value) events of ``tag`` that TensorBoard shows for the run (purged events left out)."""
    events = event_accumulator.EventAccumulator(str(run_dir / "tensorboard"))
    events.Reload()
    return [(event.step, event.value) for event in events.Scalars(tag)]


def test_tensorboard_of_a_resumed_run_shows_each_step_once_as_an_uninterrupted_run(tmp_path):
    with pytest.raises(RuntimeError, match="failing on purpose"):
        run_training(compose_run_config([*TINY, "debug.fail_after_steps=5"]), tmp_path / "resumed")
    killed = [step for step, _ in scalars(tmp_path / "resumed", "val/loss")]
    run_training(compose_run_config(TINY), tmp_path / "resumed")
    run_training(compose_run_config(TINY), tmp_path / "whole")
    for tag in ("val/loss", "val/scaled_accuracy"):
        resumed, whole = scalars(tmp_path / "resumed", tag), scalars(tmp_path / "whole", tag)
        assert [step for step, _ in resumed] == [step for step, _ in whole]
        assert [value for _, value in resumed] == pytest.approx([value for _, value in whole], rel=1e-6)
    assert killed and len(scalars(tmp_path / "whole", "val/loss")) > len(killed)


def test_wandb_resumes_the_run_under_its_own_id(tmp_path, monkeypatch):
    created = {}
    monkeypatch.setattr(loggers, "WandbLogger", lambda **options: created.update(options))
    run_dir = tmp_path / "4a6628d791f6"
    _logger(compose_run_config(["model=xlstm_1_0", "task=parity", "trainer.logger=wandb"]), run_dir, 140)
    assert created["id"] == "4a6628d791f6" and created["resume"] == "allow" and created["save_dir"] == run_dir
