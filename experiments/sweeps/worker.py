"""A local sweep's worker process (experiments.sweeps.local_launcher starts it, forked from a forkserver or spawned):
one run, its outcome sent back through a pipe. A module of its own so that a fresh worker imports only what a run
needs (not the launcher's progress display and its tables)."""

import os
import sys
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event
from pathlib import Path

from experiments.config.artifacts import PlannedRun
from experiments.stop_signals import Stopped, stop_signals_raise
from experiments.sweeps.run_execution import execute_run
from experiments.sweeps.run_outcome import RunOutcome
from experiments.sweeps.run_store import run_directory


def work(
    sending: Connection,
    ready: Event,
    environment: dict[str, str],
    run: PlannedRun,
    root: Path,
    run_function: str,
    stale_after_seconds: float,
) -> None:
    """A worker process: its run's outcome goes to the launcher; stopped by a signal, it exits with 128 + N. It runs
    in ``environment``, the launcher's when it started this worker."""
    os.environ.clear()
    os.environ.update(environment)
    with stop_signals_raise():
        try:
            ready.set()
            outcome = execute_run(run, root, run_function, stale_after_seconds)
        except Stopped as stopped:  # its run's error.json names the signal (execute_run), unless it had not started
            sending.send(
                RunOutcome("failed", run_directory(run, root), f"{stopped}: it resumes from its last checkpoint")
            )
            sys.exit(stopped.exit_code)
    sending.send(outcome)
    sending.close()
