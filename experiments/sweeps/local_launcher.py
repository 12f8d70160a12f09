"""The local launcher: each run in a process of its own, ``jobs`` at a time.

A worker that dies (killed, out of memory) costs only its own run: the failure, with the worker's exit signal or
code, is recorded for that run alone, and the runs beside it go on. A full or read-only run store stops the
launcher from starting more runs (they would fail the same way); the runs in flight finish."""

import multiprocessing
import signal
from collections import deque
from dataclasses import dataclass
from datetime import datetime, timezone
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from pathlib import Path

from rich.console import Console

from experiments.config.artifacts import PlannedRun
from experiments.sweeps.run_execution import execute_run, record_failure
from experiments.sweeps.run_outcome import RunOutcome
from experiments.sweeps.run_store import finished_result, run_directory
from experiments.sweeps.status import SweepProgress


@dataclass
class Worker:
    run: PlannedRun
    process: BaseProcess
    outcomes: Connection  # the receiving end: the worker sends its RunOutcome before it exits
    outcome: RunOutcome | None = None


def run_locally(
    runs: list[PlannedRun], root: Path, run_function: str, jobs: int, stale_after_seconds: float, console: Console
) -> list[tuple[PlannedRun, RunOutcome]]:
    """Run every run in a spawned process of its own, at most ``jobs`` at once; the outcomes in finishing order."""
    waiting = deque(runs)
    workers: list[Worker] = []
    outcomes: list[tuple[PlannedRun, RunOutcome]] = []
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: no inherited torch threads or locks
    with SweepProgress(len(runs), console) as progress:
        try:
            while waiting or workers:
                while waiting and len(workers) < jobs and not any(outcome.stops_the_sweep for _, outcome in outcomes):
                    workers.append(start_worker(context, waiting.popleft(), (root, run_function, stale_after_seconds)))
                    progress.run_started(workers[-1].run)
                if not workers:
                    break
                for worker in finished_workers(workers):
                    workers.remove(worker)
                    outcome = worker.outcome or died_outcome(worker, root)
                    outcomes.append((worker.run, outcome))
                    progress.run_finished(worker.run, outcome)
        finally:
            stop(workers)
    return outcomes


def start_worker(context, run: PlannedRun, arguments: tuple) -> Worker:
    receiving, sending = context.Pipe(duplex=False)
    process = context.Process(target=work, args=(sending, run, *arguments), name=f"run-{run.run_id}")
    process.start()
    sending.close()  # the worker holds the only sending end: the pipe reads as closed once it is gone
    return Worker(run, process, receiving)


def work(sending: Connection, run: PlannedRun, root: Path, run_function: str, stale_after_seconds: float) -> None:
    sending.send(execute_run(run, root, run_function, stale_after_seconds))
    sending.close()


def finished_workers(workers: list[Worker]) -> list[Worker]:
    """Wait until a worker sends its outcome or exits; the workers that have exited (outcomes read first)."""
    ready = wait([worker.outcomes for worker in workers] + [worker.process.sentinel for worker in workers])
    for worker in workers:
        if worker.outcomes in ready and worker.outcome is None:
            try:
                worker.outcome = worker.outcomes.recv()
            except EOFError:  # it died before sending
                pass
    finished = [worker for worker in workers if worker.process.sentinel in ready]
    for worker in finished:
        worker.process.join()
        worker.outcomes.close()
    return finished


def died_outcome(worker: Worker, root: Path) -> RunOutcome:
    """The outcome of a run whose worker exited without reporting: done if it wrote its result, else failed, with an
    error.json that says how the worker ended."""
    run_dir = run_directory(worker.run, root)
    if finished_result(run_dir) is not None:
        return RunOutcome("done", run_dir)
    error = RuntimeError(f"its worker process died while the run was in flight ({exit_description(worker.process.exitcode)})")
    return record_failure(worker.run, run_dir, error, datetime.now(timezone.utc))


def exit_description(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        return f"killed by signal {signal.Signals(-exitcode).name}" + (": out of memory?" if -exitcode == signal.SIGKILL else "")
    return f"exit code {exitcode}"


def stop(workers: list[Worker]) -> None:
    """Terminate the workers still running (the sweep was interrupted); their claims go stale with them."""
    for worker in workers:
        worker.process.terminate()
    for worker in workers:
        worker.process.join()
