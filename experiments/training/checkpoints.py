"""A run's checkpoints in ``<run_dir>/checkpoints``: the best by the validation metric, and ``last.ckpt``, from which
the next attempt of a killed run resumes (model, optimizer, schedule, step, callbacks and loops, restored by
Lightning; the data position follows from the restored step, tasks.training_position).

One set per run: a fresh start removes what an earlier attempt left, a resume keeps only the checkpoints the one it
resumes from knows. Checkpoints are written atomically, so a kill mid-write leaves the previous last.ckpt. Every
checkpoint is verified before it is used: torch.save writes a zip archive with a CRC-32 of each entry, which
torch.load never checks (bytes changed inside a tensor load as other weights), so each entry is read back against its
CRC first (zipfile's testzip). A checkpoint that cannot be this run's (damaged, unreadable, another config, another
model, or naming a best checkpoint that is missing or damaged) is reported, and the run resumes from the newest
sound one (last.ckpt, a SLURM requeue's hpc_ckpt, the best checkpoint), else starts fresh: an attempt never trains
on from a file it cannot trust.
"""

import shutil
import zipfile
from pathlib import Path
from typing import NamedTuple

import torch
from lightning.pytorch.callbacks import Callback, ModelCheckpoint
from lightning.pytorch.plugins.io import TorchCheckpointIO
from omegaconf import DictConfig, OmegaConf

from experiments.atomic import write_atomic
from experiments.config.run_identity import computation_yaml
from experiments.stop_signals import stops_held

LAST = "last.ckpt"
# Lightning's checkpoints at a SLURM requeue signal, in the run directory: written by attempts before the requeue
# saved last.ckpt at a step boundary (experiments.training.requeue); resumed from, then removed
HPC_CHECKPOINTS = "hpc_ckpt_*.ckpt"
RUN_CONFIG_KEY = "run_config"  # the checkpoint entry of RunConfigInCheckpoint


class AtomicCheckpointIO(TorchCheckpointIO):
    """Lightning writes a checkpoint to a file in the system's temporary directory and moves it into place: a copy,
    not an atomic rename, when that directory is on another filesystem than the run store (a cluster node's local
    /tmp), so a kill during the copy leaves a truncated file under the checkpoint's name. This one writes beside the
    checkpoint and renames. A stop signal during the write is raised once the checkpoint is in place: raised inside
    torch.save, it turned into the zip writer's own error ("unexpected pos ..."), and the run was recorded as failed,
    not stopped."""

    def save_checkpoint(self, checkpoint: dict, path, storage_options=None) -> None:
        if storage_options is not None:
            raise TypeError(f"storage_options={storage_options!r}: {type(self).__name__} writes local files only")
        with stops_held():
            write_atomic(Path(path), lambda handle: torch.save(checkpoint, handle), binary=True)


def resumed_config_yaml(config: DictConfig) -> str:
    """What a checkpoint must have been trained with to be resumed by a run of ``config``: what the run computes
    (experiments.config.run_identity: a run started on one node resumes on eight) less its fault injection
    (``debug``), which changes when an attempt stops, not what it computes."""
    return computation_yaml(OmegaConf.masked_copy(config, [key for key in config if key != "debug"]))


class RunConfigInCheckpoint(Callback):
    """Stores resumed_config_yaml in every checkpoint: a rerun resumes only from a checkpoint of its own config,
    also where the run directory is not keyed by the config (run_training called on its own)."""

    def __init__(self, config_yaml: str) -> None:
        self.config_yaml = config_yaml

    def on_save_checkpoint(self, trainer, pl_module, checkpoint: dict) -> None:
        checkpoint[RUN_CONFIG_KEY] = self.config_yaml


class PeriodicLastCheckpoint(ModelCheckpoint):
    """``last.ckpt`` every ``every_steps`` training steps, except after a step that a validation follows: the
    checkpoint after that validation stands for it. Lightning, resumed from a checkpoint written before a due
    validation, counts that validation as done and skips it (a best checkpoint found there would be lost)."""

    def __init__(self, checkpoints: Path, every_steps: int) -> None:
        super().__init__(
            dirpath=checkpoints, filename=Path(LAST).stem, enable_version_counter=False, every_n_train_steps=every_steps
        )

    def on_train_batch_end(self, trainer, *args, **kwargs) -> None:
        if not validates_next(trainer):
            super().on_train_batch_end(trainer, *args, **kwargs)


def validates_next(trainer) -> bool:
    """Whether a validation follows the training batch that just ended (Lightning's own test, the training epoch
    loop's _should_check_val_fx)."""
    return (trainer.fit_loop.epoch_loop.total_batch_idx + 1) % trainer.val_check_batch == 0


class RemoveRequeueCheckpoints(Callback):
    """Once fit has ended, the run directory's ``hpc_ckpt_<n>.ckpt`` (Lightning's checkpoints at a SLURM requeue, from
    attempts before requeues saved ``last.ckpt``) go: the run has its own, and on SLURM Lightning would evaluate the
    newest of them in place of the weights it is given. Every process may remove them."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir

    def on_fit_end(self, trainer, pl_module) -> None:
        for path in self.run_dir.glob(HPC_CHECKPOINTS):
            path.unlink(missing_ok=True)


def checkpoint_callbacks(checkpoints: Path, monitor: tuple[str, str], every_steps: int | None) -> list[Callback]:
    """The best checkpoint by the module's validation metric ``monitor`` (name, "max" or "min"; classification:
    scaled accuracy, regression: MSE), the run's metrics come from it; ``last.ckpt``, rewritten at every validation;
    and with ``every_steps``, ``last.ckpt`` also every that many training steps between validations. Lightning's own
    ``save_last`` beside a monitored metric is rewritten only when that metric improves. The order matters: at a
    validation ``last.ckpt`` then holds the best callback's state after the same validation. The best checkpoint is
    the first of the list; the last removes the requeue checkpoints of earlier attempts once fit has ended
    (RemoveRequeueCheckpoints)."""
    metric, mode = monitor
    best = ModelCheckpoint(dirpath=checkpoints, monitor=metric, mode=mode, save_top_k=1)
    latest = ModelCheckpoint(dirpath=checkpoints, filename=Path(LAST).stem, enable_version_counter=False)
    periodic = [PeriodicLastCheckpoint(checkpoints, every_steps)] if every_steps else []
    return [best, latest, *periodic, RemoveRequeueCheckpoints(checkpoints.parent)]


class ResumePoint(NamedTuple):
    checkpoint: Path
    step: int  # optimizer steps the checkpoint has taken


def resume_point(run_dir: Path, config_yaml: str, module: torch.nn.Module) -> ResumePoint | None:
    """The sound checkpoint of an earlier attempt of this run (same config, same model) with the most steps, to
    resume from: ``last.ckpt``, a ``hpc_ckpt_<n>.ckpt`` that Lightning wrote into the run directory when SLURM
    signalled the job before its time limit and requeued it (it may be newer than last.ckpt), or the best checkpoint
    (older than last.ckpt: the previous good one when last.ckpt is damaged). None for a fresh start, with the earlier
    attempt's checkpoints removed. Each checkpoint left out, and the choice, is one line of the run's output."""
    checkpoints = run_dir / "checkpoints"
    best = sorted(path for path in checkpoints.glob("*.ckpt") if path.name != LAST) if checkpoints.is_dir() else []
    candidates = [path for path in [checkpoints / LAST, *sorted(run_dir.glob(HPC_CHECKPOINTS)), *best] if path.exists()]
    usable, problems = [], []
    for path in candidates:
        checkpoint, problem = _read(path, config_yaml, module)
        if problem:
            problems.append(f"{path} {problem}")
        else:
            usable.append((checkpoint["global_step"], path, checkpoint))
    if problems:
        outcome = "training from step 0" if not usable else "resuming from another checkpoint"
        print(f"not resuming {run_dir}: {'; '.join(problems)}; {outcome}", flush=True)
    if not usable:
        shutil.rmtree(checkpoints, ignore_errors=True)  # a killed attempt may have written its best checkpoint only
        for path in run_dir.glob(HPC_CHECKPOINTS):
            path.unlink(missing_ok=True)
        return None
    step, path, checkpoint = max(usable, key=lambda found: (found[0], found[1].name == LAST))
    if checkpoints.exists():  # what the resumed attempt knows of; a damaged last.ckpt goes
        sound_last = {LAST} if any(found.name == LAST for _, found, _ in usable) else set()
        _remove_all_but(checkpoints, {path.name, *sound_last, *_best_checkpoint_names(checkpoint)})
    print(f"resuming {run_dir} from step {step} ({path.name})", flush=True)
    return ResumePoint(path, step)


def checkpoint_damage(path: Path) -> str | None:
    """What is wrong with a checkpoint file as the zip archive torch.save writes: an entry whose bytes do not match
    its CRC-32, or an archive that cannot be read (truncated, overwritten); None if every entry is whole. Reads the
    whole file (seconds for gigabytes, next to the minutes a resumed run saves)."""
    try:
        with zipfile.ZipFile(path) as archive:
            broken = archive.testzip()
    except Exception as error:  # a damaged directory or header fails in zipfile, zlib or struct, each its own way
        return f"cannot be read ({type(error).__name__}: {error})"
    return f"is damaged: its entry {broken} does not match its CRC-32" if broken is not None else None


def _read(path: Path, config_yaml: str, module: torch.nn.Module) -> tuple[dict | None, str | None]:
    """The checkpoint (its tensors memory-mapped, not read) and what makes it unfit to resume from, or None."""
    damage = checkpoint_damage(path)
    if damage is not None:
        return None, damage
    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=False, mmap=True)
    except Exception as error:  # a sound archive of something else fails in pickle or torch, each its own way
        return None, f"cannot be read ({type(error).__name__}: {error})"
    if not isinstance(checkpoint, dict) or not {"state_dict", "global_step"} <= checkpoint.keys():
        return None, "is not a Lightning checkpoint"
    if checkpoint.get(RUN_CONFIG_KEY) != config_yaml:
        return None, "was written by another run config"
    shapes = {name: tuple(tensor.shape) for name, tensor in module.state_dict().items()}
    if {name: tuple(tensor.shape) for name, tensor in checkpoint["state_dict"].items()} != shapes:
        return None, "holds another model's weights"
    checkpoints = path.parent if path.parent.name == "checkpoints" else path.parent / "checkpoints"  # hpc: run dir
    for name in _best_checkpoint_names(checkpoint):  # the run's final metrics come from it
        best = checkpoints / name
        if not best.exists():
            return None, f"names a best checkpoint {name} that is missing"
        if best != path and (damage := checkpoint_damage(best)) is not None:
            return None, f"names a best checkpoint {name} that {damage}"
    return checkpoint, None


def _best_checkpoint_names(checkpoint: dict) -> set[str]:
    """The file names of the best checkpoints the saved states of the monitoring checkpoint callbacks point at (the
    callbacks of last.ckpt monitor nothing; their "best" is last.ckpt itself)."""
    states = checkpoint.get("callbacks", {}).values()
    return {
        Path(state["best_model_path"]).name
        for state in states
        if isinstance(state, dict) and state.get("monitor") and state.get("best_model_path")
    }


def _remove_all_but(checkpoints: Path, keep: set[str]) -> None:
    """Removes what the resumed attempt would not know of: a best checkpoint saved after last.ckpt (the resumed run
    saves it again) and temporary files of a write that was killed. Data-parallel processes may remove the same."""
    for path in checkpoints.iterdir():
        if path.name in keep:
            continue
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
