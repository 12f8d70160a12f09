"""The training run an evaluation run loads (its ``evaluate`` section names it): where it is in the run store, the
checkpoint it is evaluated at, and why it is not ready yet (no result.json, no such checkpoint).

A sweep holds an evaluation run back while its training run is not ready (neither run nor failed: the sweep names
the training runs and the command that makes them); the evaluation itself checks again before any compute
(experiments.training.train.training_checkpoint)."""

import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path

from experiments.config.artifacts import override_value
from experiments.config.run_schema import INITIAL
from experiments.sweeps.run_store import finished_result

CHECKPOINTS = "checkpoints"  # experiments.training.checkpoints writes a run's checkpoints here
LAST = "last.ckpt"


def training_directory(evaluate: Mapping, root: Path) -> Path:
    """<root>/<scale>/<artifact>/<run_id> of the training run the section names."""
    return Path(root) / evaluate["scale"] / evaluate["artifact"] / evaluate["run_id"]


def named(evaluate: Mapping) -> str:
    return (
        f"training run {evaluate['run_id']} of {evaluate['artifact']} ({evaluate['scale']} scale; cell "
        f"{evaluate.get('cell', '')})"
    )


def training_sweep_command(
    artifact: str, scale: str, overrides: Sequence[str] = (), where: Mapping | None = None
) -> str:
    """The sweep that makes an artifact's training runs, with the user's overrides that the evaluating sweep ran
    with (e.g. ``task=offline_docs``: without them, other training runs) and, as ``--where`` pairs, the evaluating
    artifact's ``evaluates.where``: only the runs it evaluates (a value list: each value, the pairs of a key OR)."""
    pairs = [
        f"{key}={override_value(value)}"
        for key, values in (where or {}).items()
        for value in (values if isinstance(values, list) else [values])
    ]
    return " ".join(
        [
            "xlstm-suite sweep",
            artifact,
            "--scale",
            scale,
            *(shlex.quote(value) for value in overrides),
            *(f"--where {shlex.quote(pair)}" for pair in pairs),
        ]
    )


def evaluated_checkpoints(training_dir: Path, checkpoint: str) -> list[Path]:
    """The checkpoint files of ``checkpoint`` (last: last.ckpt; best: every other .ckpt, one in a sound run)."""
    folder = training_dir / CHECKPOINTS
    if checkpoint == "last":
        return [path for path in [folder / LAST] if path.exists()]
    return [path for path in sorted(folder.glob("*.ckpt")) if path.name != LAST]


def training_run_problem(evaluate: Mapping, root: Path) -> str | None:
    """Why the training run is not ready to be evaluated, naming it (the sweep names the command that makes it:
    print_waiting); None if ready, or if the evaluation takes its model's initial weights (checkpoint ``initial``: it
    needs the run's config only)."""
    if evaluate["checkpoint"] == INITIAL:
        return None
    training_dir = training_directory(evaluate, root)
    if finished_result(training_dir) is None:
        return f"{named(evaluate)} is not finished: {training_dir} holds no result.json"
    found = evaluated_checkpoints(training_dir, evaluate["checkpoint"])
    if len(found) != 1:
        return (
            f"{named(evaluate)} has no single {evaluate['checkpoint']} checkpoint in {training_dir / CHECKPOINTS} "
            f"(found {[path.name for path in found]}); it was trained with trainer.checkpoint=false, or its "
            f"checkpoints were removed: remove {training_dir} and sweep {evaluate['artifact']} again"
        )
    return None
