"""A run keeps one set of checkpoints: the best by validation, and last.ckpt holding the latest training state."""

import pytest
import torch

from experiments.config.configuration import compose_run_config
from experiments.training.module import SequenceTaskModule
from experiments.training.train import run_training

# 7 steps validated every 2: the last validation is at step 6, and a tiny model's validation stops improving early
TINY = [
    "model=xlstm_1_0",
    "task=parity",
    "trainer.max_steps=7",
    "trainer.val_every_steps=2",
    "trainer.batch_size=4",
    "model.embedding_dim=16",
    "task.val_samples=8",
    "task.test_samples=8",
    "task.eval_max_length=48",
    "trainer.num_threads=1",
]


def load(path):
    return torch.load(path, map_location="cpu", weights_only=False)


def checkpoint_names(run_dir):
    return sorted(path.name for path in (run_dir / "checkpoints").iterdir())


def test_last_checkpoint_holds_the_state_after_the_final_step(tmp_path, monkeypatch):
    final = {}
    monkeypatch.setattr(
        SequenceTaskModule,
        "on_train_end",
        lambda module: final.update({k: v.clone() for k, v in module.state_dict().items()}),
    )
    run_training(compose_run_config(TINY), tmp_path)
    last = load(tmp_path / "checkpoints" / "last.ckpt")
    assert last["global_step"] == 7
    assert last["state_dict"].keys() == final.keys()
    assert all(torch.equal(last["state_dict"][name], final[name]) for name in final)


def test_a_fresh_attempt_replaces_the_checkpoints_of_a_killed_one(tmp_path):
    with pytest.raises(RuntimeError, match="failing on purpose"):
        run_training(compose_run_config([*TINY, "debug.fail_after_steps=5"]), tmp_path)
    # last.ckpt is rewritten at every validation, improved or not: a killed run keeps its latest validated state
    assert load(tmp_path / "checkpoints" / "last.ckpt")["global_step"] == 4
    run_training(compose_run_config([*TINY, "seed=1"]), tmp_path)  # another config: it does not resume (test_resume)
    names = checkpoint_names(tmp_path)
    assert len(names) == 2 and "last.ckpt" in names and not any("-v" in name for name in names)
    assert load(tmp_path / "checkpoints" / "last.ckpt")["global_step"] == 7
