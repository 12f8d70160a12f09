"""A run killed after k steps and run again continues from its last checkpoint and ends equal to an uninterrupted
run: the same weights, metrics and metrics.csv, bit for bit on CPU (no model draws random numbers while training, and
the data of a step is a function of (data seed, step)). The kill is XLSTM_SUITE_FAIL_AFTER_STEPS, which leaves the
run's config and id as they are."""

import json
import time

import pytest
import torch
from lightning.pytorch.callbacks import Callback

from experiments.config.artifacts import PlannedRun, run_id_of
from experiments.config.configuration import compose_run_config
from experiments.sweeps.run_execution import execute_run
from experiments.sweeps.run_store import ERROR_FILE, METRICS_FILE, OUTPUT_FILE, finished_result, run_directory
from experiments.sweeps.sweep import run_sweep
from experiments.training import train
from experiments.training.checkpoints import AtomicCheckpointIO, resume_point, resumed_config_yaml
from experiments.training.data import build_datamodule
from experiments.training.train import FAIL_AFTER_STEPS_VARIABLE, build_module, run_training
from experiments.training.training_clock import TrainingClock
from tasks.fixed_sets import TRAIN_STREAM
from tasks.fixed_sets import TrainingBatches as FixedSetBatches
from tasks.formal_languages.data import TrainingBatches as FormalLanguageBatches
from tasks.formal_languages.registry import get_task
from tasks.training_position import TrainingPosition
from tests.sweep_fakes import small_artifact

TINY = ["trainer.num_threads=1", "model.embedding_dim=16", "model.num_blocks=2"]
# 8 steps validated every 3: a resume from step 4 or 5 still has a validation (step 6) and the final steps ahead
PARITY = [
    *TINY,
    "model=xlstm_1_0",
    "task=parity",
    "trainer.max_steps=8",
    "trainer.val_every_steps=3",
    "trainer.batch_size=4",
    "task.val_samples=8",
    "task.test_samples=8",
    "task.eval_max_length=48",
    "optim.lr=1e-2",
]
# 3 batches per epoch: the resumed run starts inside the second epoch's order
MQAR = [
    *TINY,
    "model=xlstm_1_0",
    "task=mqar",
    "task.context_length=16",
    "task.num_kv_pairs=2",
    "task.train_samples=24",
    "task.val_samples=8",
    "task.test_samples=8",
    "trainer.max_steps=8",
    "trainer.val_every_steps=3",
    "trainer.batch_size=8",
    "optim.lr=1e-2",
]
# one class per sequence, pooled over padded sequences of varying length; 3 batches per epoch as MQAR
LISTOPS = [
    *TINY,
    "model=xlstm_1_0",
    "task=lra_listops",
    "task.max_depth=4",
    "task.max_args=4",
    "task.min_length=6",
    "task.max_length=40",
    "task.train_samples=24",
    "task.val_samples=8",
    "task.test_samples=8",
    "trainer.max_steps=8",
    "trainer.val_every_steps=3",
    "trainer.batch_size=8",
    "optim.lr=1e-2",
]
# warm-up over 2 steps, then the cosine: the resumed schedule must continue where it stopped
LM = [
    *TINY,
    "model=llama",
    "task=lm_sample",
    "optim=adamw_lm",
    "optim.warmup_steps=2",
    "trainer.max_steps=8",
    "trainer.val_every_steps=3",
    "trainer.batch_size=4",
    "task.context_length=16",
    "task.val_sequences=4",
    "task.test_sequences=4",
]


def planned(overrides: list[str]) -> PlannedRun:
    config = compose_run_config(overrides)
    return PlannedRun("resume-test", "adhoc", {}, list(overrides), config=config, run_id=run_id_of(config))


TIMES = ("train/seconds", "train/cpu_seconds")  # a run's wall and CPU times: never equal across two runs


def without_times(metrics: dict[str, float]) -> dict[str, float]:
    return {name: value for name, value in metrics.items() if name not in TIMES}


def state_dict(run_dir) -> dict[str, torch.Tensor]:
    return torch.load(run_dir / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False)["state_dict"]


def assert_equal_runs(resumed, uninterrupted) -> None:
    """Weights after the final step, the metrics of result.json (less the wall and CPU times) and metrics.csv."""
    metrics = [without_times(finished_result(run_dir)["metrics"]) for run_dir in (resumed, uninterrupted)]
    assert metrics[0] == metrics[1]
    weights = [state_dict(run_dir) for run_dir in (resumed, uninterrupted)]
    assert weights[0].keys() == weights[1].keys()
    assert all(torch.equal(weights[0][name], weights[1][name]) for name in weights[1])
    assert (resumed / METRICS_FILE).read_text() == (uninterrupted / METRICS_FILE).read_text()
    assert sorted(path.name for path in (resumed / "checkpoints").iterdir()) == sorted(
        path.name for path in (uninterrupted / "checkpoints").iterdir()
    )


@pytest.mark.parametrize(
    "overrides, every_steps, kill_at, resumed_at",
    [
        (PARITY, 1, 5, 4),  # checkpoints at every step: the last one before the kill
        (MQAR, 2, 6, 4),  # every 2 steps: step 4 (the kill at step 6 comes before that step's checkpoint)
        (LM, 2, 5, 4),
        (LISTOPS, 2, 6, 4),
    ],
    ids=["formal_language", "mqar", "lm", "lra_listops"],
)
def test_a_killed_run_resumes_and_ends_as_an_uninterrupted_run(
    tmp_path, monkeypatch, capsys, overrides, every_steps, kill_at, resumed_at
):
    run = planned([*overrides, f"+trainer.checkpoint_every_steps={every_steps}"])
    assert execute_run(run, tmp_path / "uninterrupted").status == "done"
    monkeypatch.setenv(FAIL_AFTER_STEPS_VARIABLE, str(kill_at))
    killed = execute_run(run, tmp_path / "killed")
    assert killed.status == "failed" and "failing on purpose" in killed.detail
    run_dir = run_directory(run, tmp_path / "killed")
    assert torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=False)["global_step"] == resumed_at
    monkeypatch.delenv(FAIL_AFTER_STEPS_VARIABLE)
    capsys.readouterr()
    assert execute_run(run, tmp_path / "killed").status == "done"
    output = capsys.readouterr().out  # output.log in a sweep's worker process (pytest captures sys.stdout here)
    assert f"resuming {run_dir} from step {resumed_at} (last.ckpt)" in output
    assert f"step {resumed_at}/8 " in output  # the progress line of the resumed attempt's start
    assert_equal_runs(run_dir, run_directory(run, tmp_path / "uninterrupted"))


@pytest.mark.slow  # two sweeps, each a worker process that imports torch and Lightning
def test_the_sweep_reruns_a_killed_run_from_its_checkpoint(tmp_path, monkeypatch):
    artifact = small_artifact(["xlstm_1_0"])
    overrides = [
        "trainer.max_steps=6",
        "trainer.val_every_steps=2",
        "+trainer.checkpoint_every_steps=1",
        "trainer.num_threads=1",
    ]
    [run] = artifact.runs("smoke", overrides)
    assert execute_run(run, tmp_path / "uninterrupted").status == "done"  # what a worker runs, in this process
    monkeypatch.setenv(FAIL_AFTER_STEPS_VARIABLE, "4")  # the workers inherit the environment
    assert run_sweep(artifact, "smoke", jobs=1, overrides=overrides, root=tmp_path / "killed") != 0
    run_dir = run_directory(run, tmp_path / "killed")
    assert (run_dir / ERROR_FILE).exists()
    monkeypatch.delenv(FAIL_AFTER_STEPS_VARIABLE)
    assert run_sweep(artifact, "smoke", jobs=1, overrides=overrides, root=tmp_path / "killed") == 0
    assert f"resuming {run_dir} from step 3 (last.ckpt)" in (run_dir / OUTPUT_FILE).read_text()
    assert_equal_runs(run_dir, run_directory(run, tmp_path / "uninterrupted"))


class FailInValidation(Callback):
    """A kill while the validation after step ``step`` runs (a periodic checkpoint of that step, written before
    the validation, would make Lightning skip the validation when it resumes)."""

    def __init__(self, steps: int):
        self.steps = steps

    def on_validation_start(self, trainer, *args):
        if trainer.global_step == self.steps and trainer.state.fn == "fit":
            raise RuntimeError("killed in the validation")


def test_a_run_killed_in_a_validation_repeats_it(tmp_path, monkeypatch):
    overrides = [*PARITY, "trainer.val_every_steps=2", "+trainer.checkpoint_every_steps=1"]
    uninterrupted = run_training(compose_run_config(overrides), tmp_path / "uninterrupted")
    monkeypatch.setattr(train, "FailAfterSteps", FailInValidation)
    monkeypatch.setenv(FAIL_AFTER_STEPS_VARIABLE, "4")
    with pytest.raises(RuntimeError, match="killed in the validation"):
        run_training(compose_run_config(overrides), tmp_path / "killed")
    monkeypatch.delenv(FAIL_AFTER_STEPS_VARIABLE)
    resumed = run_training(compose_run_config(overrides), tmp_path / "killed")
    assert torch.load(tmp_path / "killed" / "checkpoints" / "last.ckpt", weights_only=False)["global_step"] == 8
    assert (tmp_path / "killed" / METRICS_FILE).read_text() == (tmp_path / "uninterrupted" / METRICS_FILE).read_text()
    assert without_times(resumed) == without_times(uninterrupted)


@pytest.mark.parametrize("damage", ["truncated", "not a checkpoint", "another config"])
def test_a_damaged_last_checkpoint_is_reported_and_the_run_resumes_from_its_best(tmp_path, monkeypatch, capsys, damage):
    run = planned([*PARITY, "+trainer.checkpoint_every_steps=1"])
    assert execute_run(run, tmp_path / "uninterrupted").status == "done"
    monkeypatch.setenv(FAIL_AFTER_STEPS_VARIABLE, "5")
    assert execute_run(run, tmp_path / "killed").status == "failed"
    monkeypatch.delenv(FAIL_AFTER_STEPS_VARIABLE)
    run_dir = run_directory(run, tmp_path / "killed")
    last = run_dir / "checkpoints" / "last.ckpt"
    if damage == "truncated":
        last.write_bytes(last.read_bytes()[: last.stat().st_size // 2])
    elif damage == "not a checkpoint":
        last.write_bytes(json.dumps({"global_step": 4}).encode())
    else:  # a checkpoint of the same model trained with another learning rate
        other = planned([*PARITY, "optim.lr=1e-3", "+trainer.checkpoint_every_steps=1"])
        assert execute_run(other, tmp_path / "other").status == "done"
        last.write_bytes((run_directory(other, tmp_path / "other") / "checkpoints" / "last.ckpt").read_bytes())
    capsys.readouterr()
    assert execute_run(run, tmp_path / "killed").status == "done"
    output = capsys.readouterr().out
    [line, resumed] = [line for line in output.splitlines() if "resuming" in line]
    reason = {
        "truncated": "cannot be read",
        "not a checkpoint": "cannot be read",
        "another config": "was written by another run config",
    }[damage]
    assert line.startswith(f"not resuming {run_dir}: {last} {reason}")
    assert line.endswith("resuming from another checkpoint")  # the best checkpoint, of the validation at step 3
    assert resumed.startswith(f"resuming {run_dir} from step 3 (") and "step 3/8 " in output.split(resumed)[1]
    assert_equal_runs(run_dir, run_directory(run, tmp_path / "uninterrupted"))


def test_training_batches_from_a_resumed_step_are_the_uninterrupted_runs():
    """The loaders start at the batch of a restored step, computed, not drawn through: the batches from step k
    equal those an uninterrupted loader yields from its k-th on (fixed sets: across an epoch boundary)."""
    mqar = build_datamodule(compose_run_config(MQAR).task, 8).fixed_set(TRAIN_STREAM, 24)

    def first(batches, count):
        iterator = iter(batches)
        return [next(iterator) for _ in range(count)]

    for make in (
        lambda start: FixedSetBatches(mqar, 8, 0, TrainingPosition(start_step=start)),
        lambda start: FormalLanguageBatches(get_task("parity"), 4, 40, 0, TrainingPosition(start_step=start)),
    ):
        uninterrupted = first(make(0), 9)
        for start in (1, 3, 5):
            resumed = first(make(start), 9 - start)
            assert all(
                torch.equal(a, b) for batch, other in zip(resumed, uninterrupted[start:]) for a, b in zip(batch, other)
            )


def test_a_checkpoint_write_that_dies_midway_leaves_the_previous_one(tmp_path, monkeypatch):
    path = tmp_path / "checkpoints" / "last.ckpt"
    AtomicCheckpointIO().save_checkpoint({"global_step": 3}, path)

    def dies_midway(checkpoint, handle):
        handle.write(b"PK\x03\x04 the first bytes of a zip archive")
        raise KeyboardInterrupt  # as a signal arrives

    monkeypatch.setattr(torch, "save", dies_midway)
    with pytest.raises(KeyboardInterrupt):
        AtomicCheckpointIO().save_checkpoint({"global_step": 4}, path)
    monkeypatch.undo()
    assert [file.name for file in path.parent.iterdir()] == ["last.ckpt"]
    assert torch.load(path, weights_only=True) == {"global_step": 3}


def test_a_requeued_run_resumes_from_lightnings_slurm_checkpoint_when_it_is_newer(tmp_path, monkeypatch, capsys):
    """At SLURM's signal before the time limit Lightning saves hpc_ckpt_<n>.ckpt into the run directory and requeues
    the job: the next attempt resumes from whichever of it and last.ckpt has taken more steps."""
    run = planned([*PARITY, "+trainer.checkpoint_every_steps=2"])
    monkeypatch.setenv(FAIL_AFTER_STEPS_VARIABLE, "5")
    assert execute_run(run, tmp_path / "killed").status == "failed"
    monkeypatch.delenv(FAIL_AFTER_STEPS_VARIABLE)
    run_dir = run_directory(run, tmp_path / "killed")
    last = torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=False)
    assert last["global_step"] == 4
    (run_dir / "hpc_ckpt_1.ckpt").write_bytes(b"not a checkpoint")  # an older requeue's file, damaged
    torch.save(dict(last, global_step=5), run_dir / "hpc_ckpt_2.ckpt")  # as if saved one step later, at the signal
    config = run.config
    module = build_module(config, build_datamodule(config.task, config.trainer.batch_size).spec)
    found = resume_point(run_dir, resumed_config_yaml(config), module)
    assert (found.checkpoint.name, found.step) == ("hpc_ckpt_2.ckpt", 5)
    output = capsys.readouterr().out
    assert f"{run_dir / 'hpc_ckpt_1.ckpt'} cannot be read" in output and "resuming from another checkpoint" in output
    assert f"resuming {run_dir} from step 5 (hpc_ckpt_2.ckpt)" in output


def resumed_with_clock(tmp_path, monkeypatch, recorded: dict[str, float]) -> dict[str, float]:
    """The metrics of a run killed after 5 steps and run again, its checkpoint's clock first set to ``recorded``
    (after checking that the clock recorded both times, each far below the 1000 s set in the tests)."""
    run = planned([*PARITY, "+trainer.checkpoint_every_steps=1"])
    monkeypatch.setenv(FAIL_AFTER_STEPS_VARIABLE, "5")
    assert execute_run(run, tmp_path).status == "failed"
    monkeypatch.delenv(FAIL_AFTER_STEPS_VARIABLE)
    last = run_directory(run, tmp_path) / "checkpoints" / "last.ckpt"
    checkpoint = torch.load(last, weights_only=False)
    [clock_key] = [key for key in checkpoint["callbacks"] if key.startswith("TrainingClock")]
    clock = checkpoint["callbacks"][clock_key]
    assert 0 < clock["seconds"] < 1000 and 0 < clock["cpu_seconds"] < 1000
    checkpoint["callbacks"][clock_key] = recorded
    torch.save(checkpoint, last)
    assert execute_run(run, tmp_path).status == "done"
    return finished_result(run_directory(run, tmp_path))["metrics"]


def test_a_resumed_runs_training_time_counts_the_attempts_before_its_checkpoint(tmp_path, monkeypatch):
    """train/seconds and train/cpu_seconds of a resumed run are the times its checkpoint recorded plus the resumed
    attempt's."""
    metrics = resumed_with_clock(tmp_path, monkeypatch, {"seconds": 1000.0, "cpu_seconds": 500.0})
    assert 1000 < metrics["train/seconds"] < 1000 + 600 and 500 < metrics["train/cpu_seconds"] < 500 + 600
    assert metrics["train/threads"] == torch.get_num_threads()


def test_a_run_resumed_from_a_checkpoint_without_cpu_time_records_none_rather_than_a_part(tmp_path, monkeypatch):
    """A checkpoint written before the CPU time was recorded: the resumed run's result has no train/cpu_seconds
    (the attempts before the checkpoint are unknown), and its wall time still counts them."""
    metrics = resumed_with_clock(tmp_path, monkeypatch, {"seconds": 1000.0})
    assert "train/cpu_seconds" not in metrics and metrics["train/seconds"] > 1000


def test_the_cpu_time_leaves_out_the_time_the_process_did_not_run():
    """What tells a run that shared its cores from a quiet one: wall time spent off the CPU (here asleep, as a
    process waiting for a core) adds to seconds() but not to cpu_seconds()."""
    clock = TrainingClock()
    time.sleep(0.3)
    assert clock.seconds() >= 0.3 and clock.cpu_seconds() < 0.5 * clock.seconds()
