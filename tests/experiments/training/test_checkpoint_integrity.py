"""A checkpoint is verified before it is used: bytes changed inside one tensor of last.ckpt (the archive's headers
intact, so torch.load reads it) are found by the CRC-32 of its entry, named, and the run resumes from the previous
sound checkpoint (the best one), else from step 0, ending equal to an uninterrupted run; an evaluation refuses a
damaged checkpoint of its training run."""

import os
import random
import shutil
import signal
import struct
import zipfile
from pathlib import Path

import pytest
import torch
from omegaconf import open_dict

from experiments.stop_signals import Stopped, stop_signals_raise
from experiments.sweeps.run_execution import execute_run
from experiments.sweeps.run_store import run_directory
from experiments.training.checkpoints import AtomicCheckpointIO, checkpoint_damage
from experiments.training.train import FAIL_AFTER_STEPS_VARIABLE, TrainingRunMissing, training_checkpoint
from tests.experiments.training.test_resume import PARITY, assert_equal_runs, planned

# checkpoints every step, validations at steps 3 and 6: killed at step 5, the run leaves last.ckpt at step 4 and
# its best checkpoint at step 3
RUN = planned([*PARITY, "+trainer.checkpoint_every_steps=1"])


def largest_tensor_entry(path: Path) -> zipfile.ZipInfo:
    with zipfile.ZipFile(path) as archive:
        return max((info for info in archive.infolist() if "/data/" in info.filename), key=lambda info: info.file_size)


def overwrite_inside_a_tensor(path: Path, size: int) -> str:
    """Random bytes over ``size`` bytes (at most the tensor's) inside the largest tensor's data; the local header,
    the central directory and every other entry stay as they were. Returns the entry's name."""
    entry = largest_tensor_entry(path)
    data = bytearray(path.read_bytes())
    name_length, extra_length = struct.unpack("<HH", data[entry.header_offset + 26 : entry.header_offset + 30])
    start = entry.header_offset + 30 + name_length + extra_length
    size = min(size, entry.file_size)
    data[start : start + size] = random.Random(0).randbytes(size)
    path.write_bytes(bytes(data))
    return entry.filename


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("uninterrupted")
    assert execute_run(RUN, root).status == "done"
    return run_directory(RUN, root)


def killed_at_step_5(root: Path, monkeypatch) -> Path:
    monkeypatch.setenv(FAIL_AFTER_STEPS_VARIABLE, "5")
    assert execute_run(RUN, root).status == "failed"
    monkeypatch.delenv(FAIL_AFTER_STEPS_VARIABLE)
    run_dir = run_directory(RUN, root)
    assert torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=False)["global_step"] == 4
    return run_dir


def best_checkpoint(run_dir: Path) -> Path:
    [best] = [path for path in (run_dir / "checkpoints").iterdir() if path.name != "last.ckpt"]
    return best


@pytest.mark.parametrize(
    "size", [16, pytest.param(65536, marks=pytest.mark.slow)], ids=["4 floats", "64 KB or the whole tensor"]
)
def test_a_last_checkpoint_damaged_inside_a_tensor_is_named_and_the_run_resumes_from_its_best(
    tmp_path, monkeypatch, capsys, uninterrupted, size
):
    run_dir = killed_at_step_5(tmp_path, monkeypatch)
    last, best = run_dir / "checkpoints" / "last.ckpt", best_checkpoint(run_dir)
    entry = overwrite_inside_a_tensor(last, size)
    torch.load(last, weights_only=False)  # torch reads it without complaint: other weights
    capsys.readouterr()
    assert execute_run(RUN, tmp_path).status == "done"
    output = capsys.readouterr().out
    assert (
        f"not resuming {run_dir}: {last} is damaged: its entry {entry} does not match its CRC-32; resuming from "
        "another checkpoint"
    ) in output
    assert f"resuming {run_dir} from step 3 ({best.name})" in output
    assert_equal_runs(run_dir, uninterrupted)


@pytest.mark.slow  # a third training of the run (the default suite resumes from the best checkpoint)
def test_with_its_best_checkpoint_damaged_too_the_run_starts_from_step_0(tmp_path, monkeypatch, capsys, uninterrupted):
    run_dir = killed_at_step_5(tmp_path, monkeypatch)
    last, best = run_dir / "checkpoints" / "last.ckpt", best_checkpoint(run_dir)
    overwrite_inside_a_tensor(best, 16)
    capsys.readouterr()
    assert execute_run(RUN, tmp_path).status == "done"
    output = capsys.readouterr().out
    [line] = [line for line in output.splitlines() if "resuming" in line]
    assert f"{last} names a best checkpoint {best.name} that is damaged: its entry" in line
    assert f"{best} is damaged: its entry" in line and line.endswith("training from step 0")
    assert_equal_runs(run_dir, uninterrupted)


def test_a_sound_checkpoint_has_no_damage_and_a_truncated_one_cannot_be_read(uninterrupted, tmp_path):
    last = uninterrupted / "checkpoints" / "last.ckpt"
    assert checkpoint_damage(last) is None
    truncated = tmp_path / "truncated.ckpt"
    truncated.write_bytes(last.read_bytes()[: last.stat().st_size // 2])
    assert checkpoint_damage(truncated).startswith("cannot be read (BadZipFile: ")


def test_an_evaluation_refuses_a_damaged_checkpoint_of_its_training_run(uninterrupted, tmp_path):
    training_dir = tmp_path / "runs" / RUN.scale / RUN.artifact / RUN.run_id
    shutil.copytree(uninterrupted, training_dir)
    best = best_checkpoint(training_dir)
    overwrite_inside_a_tensor(best, 16)
    config = RUN.config.copy()
    with open_dict(config):
        config.evaluate = {"artifact": RUN.artifact, "scale": RUN.scale, "run_id": RUN.run_id, "checkpoint": "best"}
    with pytest.raises(TrainingRunMissing, match=f"its checkpoint {best} is damaged: its entry .* CRC-32; remove"):
        training_checkpoint(config, tmp_path / "runs" / "adhoc" / "evaluation" / "0123456789ab")


class SignalsWhenSaved:
    """Pickled (by torch.save) as an empty dict, sending SIGTERM to this process on the way."""

    def __reduce__(self):
        os.kill(os.getpid(), signal.SIGTERM)
        return dict, ()


def test_a_stop_during_a_checkpoint_write_is_raised_once_the_checkpoint_is_in_place(tmp_path):
    path = tmp_path / "last.ckpt"
    checkpoint = {"before": torch.zeros(1000), "signal": SignalsWhenSaved(), "after": torch.ones(1000)}
    with stop_signals_raise(), pytest.raises(Stopped, match="SIGTERM"):
        AtomicCheckpointIO().save_checkpoint(checkpoint, path)
    assert checkpoint_damage(path) is None
    assert torch.load(path, weights_only=False)["after"].sum() == 1000  # the dict it pickled as is no weight
    assert [file.name for file in tmp_path.iterdir()] == ["last.ckpt"]
