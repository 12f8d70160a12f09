"""One run in a worker process: claim it, train it with the run function, record result.json or error.json.

Faults stay with the run they hit: a run directory that cannot be created or written (a file in its way, a
read-only or full filesystem) gives a failed outcome naming the path and the OS error, never an exception, and
no temporary file is left behind."""

import importlib
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from experiments import run_kinds
from experiments.atomic import temporary_prefix
from experiments.config.artifacts import PlannedRun
from experiments.stop_signals import Stopped
from experiments.sweeps.claims import (
    CLAIM_FILE,
    DEFAULT_STALE_AFTER_SECONDS,
    heartbeat_seconds_for,
    holding,
    read_claim,
)
from experiments.sweeps.run_outcome import RunOutcome
from experiments.sweeps.run_store import (
    CELL_FILE,
    CONFIG_FILE,
    ERROR_FILE,
    OUTPUT_FILE,
    RESULT_FILE,
    RUN_STORE,
    claim_run,
    divergence_note,
    finished_result,
    run_directory,
    write_error,
    write_result,
    write_run_inputs,
)

# experiments.run_kinds.run (training, or the run's evaluation kind) by the name workers receive it under (a spawned
# process's arguments, a SLURM job's manifest)
DEFAULT_RUN_FUNCTION = f"{run_kinds.run.__module__}.{run_kinds.run.__qualname__}"


def execute_run(
    run: PlannedRun,
    root: Path = RUN_STORE,
    run_function: str = DEFAULT_RUN_FUNCTION,
    stale_after_seconds: float = DEFAULT_STALE_AFTER_SECONDS,
    decided: Callable[[RunOutcome | None], None] = lambda outcome: None,
) -> RunOutcome:
    """Claim the run, train it with the run function and record result.json or error.json; skip it if done or claimed.
    ``decided`` hears the decision before any training: None once this process holds the claim, else the outcome of
    not training (a SLURM job's rank 0 tells its other ranks, experiments.sweeps.rank_coordination)."""
    run_dir = run_directory(run, root)
    try:
        claim = claim_run(run_dir, stale_after_seconds)
    except OSError as error:
        outcome = store_failure(run_dir, error, "could not claim the run")
        decided(outcome)
        return outcome
    if claim is None:
        outcome = skipped_outcome(run_dir)
        decided(outcome)
        return outcome
    with holding(claim, heartbeat_seconds_for(stale_after_seconds)):
        decided(None)
        remove_temporary_files(run_dir)
        return train_and_record(run, run_dir, run_function)


def train_as_another_rank(
    run: PlannedRun, rank: int, root: Path = RUN_STORE, run_function: str = DEFAULT_RUN_FUNCTION
) -> RunOutcome:
    """Rank ``rank`` > 0 of a run on several processes (a SLURM job's other tasks): train beside rank 0, which holds
    the claim (it said so: experiments.sweeps.rank_coordination) and records the result. Output:
    output-rank<rank>.log."""
    run_dir = run_directory(run, root)
    run_dir.mkdir(parents=True, exist_ok=True)
    output = Path(OUTPUT_FILE)
    with output_to(run_dir / f"{output.stem}-rank{rank}{output.suffix}"):
        train(run.config, run_dir, run_function)
    return RunOutcome("done", run_dir)


def skipped_outcome(run_dir: Path) -> RunOutcome:
    if finished_result(run_dir) is not None:
        return RunOutcome("already done", run_dir)
    holder = read_claim(run_dir / CLAIM_FILE)
    return RunOutcome("claimed", run_dir, f"claimed by {holder.describe()}" if holder else "claimed by another worker")


def train_and_record(run: PlannedRun, run_dir: Path, run_function: str) -> RunOutcome:
    """Train the run; error.json for a failure, or for a stop signal (then raised on: its worker stops), naming it."""
    started = datetime.now(UTC)
    try:
        write_run_inputs(run_dir, run)
        with output_to(run_dir / OUTPUT_FILE):
            metrics = train(run.config, run_dir, run_function)
        write_result(run_dir, run, metrics, started)
    except Exception as error:
        return record_failure(run, run_dir, error, started)
    except Stopped as stopped:
        record_failure(run, run_dir, stopped, started)
        raise
    return RunOutcome("done", run_dir, divergence_note(metrics))


def record_failure(run: PlannedRun, run_dir: Path, error: BaseException, started: datetime) -> RunOutcome:
    """error.json for a failed run; if the store cannot take it either, the outcome carries both errors."""
    try:
        error_path = write_error(run_dir, run, error, started)
    except OSError as store_error:
        return store_failure(
            run_dir, store_error, f"{type(error).__name__}: {error}; its error.json could not be written"
        )
    return RunOutcome(
        "failed",
        run_dir,
        f"{type(error).__name__}: {error} ({error_path})",
        store_error=error if isinstance(error, OSError) else None,
    )


def store_failure(run_dir: Path, error: OSError, what: str) -> RunOutcome:
    return RunOutcome("failed", run_dir, f"{what}: {describe_os_error(error)}", store_error=error)


def describe_os_error(error: OSError) -> str:
    """``[Errno 28] No space left on device: '<path>'``: the OS error with the path it names."""
    return str(error) if error.filename else f"{error} (in the run store)"


def remove_temporary_files(run_dir: Path) -> None:
    """Temporary files of the run's own files left by a killed writer; only the claim holder writes them."""
    for name in (CONFIG_FILE, CELL_FILE, RESULT_FILE, ERROR_FILE):
        for leftover in run_dir.glob(f"{temporary_prefix(run_dir / name)}*"):
            leftover.unlink(missing_ok=True)


def train(config: DictConfig, run_dir: Path, run_function: str) -> dict[str, float]:
    """Run ``run_function`` on the run: the default runs it through experiments.run_kinds (training, or the run
    function of its evaluation kind); another (a test's fake) is imported by its dotted name."""
    function = run_kinds.run if run_function == DEFAULT_RUN_FUNCTION else import_run_function(run_function)
    num_threads = OmegaConf.select(config, "trainer.num_threads")
    if num_threads:
        use_threads(num_threads)
    return function(config, run_dir)


def use_threads(num_threads: int) -> None:
    """torch's intra-op threads for the run: set directly where torch is imported already, else through the
    variables torch reads when it is imported (a fresh worker need not import torch, 2-3 s here, for a run function
    that never uses it)."""
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(num_threads)
    else:
        os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(num_threads)


def import_run_function(dotted_path: str) -> Callable[[DictConfig, Path], dict[str, float]]:
    module, name = dotted_path.rsplit(".", 1)
    return getattr(importlib.import_module(module), name)


@contextmanager
def output_to(path: Path) -> Iterator[None]:
    """Send this process's stdout and stderr (file descriptors 1 and 2) to a file while the run trains."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(path, "a") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            for descriptor, original in zip((1, 2), saved):
                os.dup2(original, descriptor)
                os.close(original)
