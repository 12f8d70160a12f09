"""The local launcher: each run in a process of its own, ``jobs`` at a time.

A worker that dies (killed, out of memory) costs only its own run: the failure, with the worker's exit signal or
code, is recorded for that run alone, and the runs beside it go on. A worker stopped by SIGTERM or SIGINT records
the signal in its run's error.json, releases its claim and exits with 128 + the signal's number. A full or
read-only run store stops the launcher from starting more runs (they would fail the same way); the runs in flight
finish.

A stop signal to the launcher itself (experiments.stop_signals) is forwarded to every worker once it is ready (its
own handlers installed); the launcher waits for them to record their runs (at most STOP_GRACE_SECONDS, then kills
them, and records those runs as killed) and raises Stopped on: every interrupted run is resumable and none is
claimed by a process that is gone."""

import multiprocessing
import os
import signal
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from multiprocessing import forkserver
from multiprocessing.connection import Connection, wait
from multiprocessing.context import BaseContext
from multiprocessing.process import BaseProcess
from multiprocessing.synchronize import Event
from pathlib import Path

from rich.console import Console

from experiments import run_kinds
from experiments.config.artifacts import PlannedRun
from experiments.stop_signals import STOP_SIGNALS, Stopped, starting_a_child
from experiments.sweeps.run_execution import DEFAULT_RUN_FUNCTION, record_failure
from experiments.sweeps.run_outcome import RunOutcome
from experiments.sweeps.run_store import finished_result, run_directory
from experiments.sweeps.status import SweepProgress
from experiments.sweeps.worker import work
from experiments.sweeps.worker_allocator import worker_environment

STOP_GRACE_SECONDS = 30.0  # a stopped worker's time to record its run (SLURM's KillWait is 30 s by default)


@dataclass
class Worker:
    run: PlannedRun
    process: BaseProcess
    outcomes: Connection  # the receiving end: the worker sends its RunOutcome before it exits
    ready: Event  # set by the worker once its stop-signal handlers are installed
    outcome: RunOutcome | None = None
    listening: bool = True  # until its outcome (or the pipe's end) is read: a read pipe stays readable at its end


def run_locally(
    runs: list[PlannedRun],
    root: Path,
    run_function: str,
    jobs: int,
    stale_after_seconds: float,
    console: Console,
    allocator: str = "system",
) -> list[tuple[PlannedRun, RunOutcome]]:
    """Run every run in a process of its own, at most ``jobs`` at once; the outcomes in finishing order. Training and
    evaluation workers use ``allocator`` (experiments.sweeps.worker_allocator)."""
    if not runs:
        return []  # no forkserver started for nothing (it would hold this command's output open while it imports)
    waiting = deque(runs)
    workers: list[Worker] = []
    outcomes: list[tuple[PlannedRun, RunOutcome]] = []
    with SweepProgress(len(runs), console) as progress:
        try:
            context = worker_context(run_function, allocator, console)
            while waiting or workers:
                while waiting and len(workers) < jobs and not any(outcome.stops_the_sweep for _, outcome in outcomes):
                    start_worker(context, waiting.popleft(), (root, run_function, stale_after_seconds), workers)
                    progress.run_started(workers[-1].run)
                if not workers:
                    break
                for worker in finished_workers(workers):
                    workers.remove(worker)
                    outcome = worker.outcome or died_outcome(worker, root)
                    outcomes.append((worker.run, outcome))
                    progress.run_finished(worker.run, outcome)
        except Stopped as stopped:
            stop(workers, stopped.signum, root)
            raise
        finally:
            stop(workers, signal.SIGTERM, root)  # an error of this process: its workers' runs stay resumable
    return outcomes


def worker_context(run_function: str, allocator: str = "system", console: Console | None = None) -> BaseContext:
    """How workers start. A training or evaluation run forks from a forkserver that imported run_kinds.FIRST_IMPORTS
    once (a spawned worker spent 8-11 s of a core here importing torch and Lightning before its run began; a forked
    one is ready in 0.05 s). The server is a single-threaded process that ran no torch op, so a worker inherits no
    torch threads or locks; that importing training leaves no CUDA state to inherit is what tests/gpu/test_gpu_sweep.py
    checks on a GPU. The server starts with ``allocator``'s variables (tcmalloc preloaded: every worker it forks has
    it); a server this process started before keeps its own. Any other run function (a test's fake) gets a fresh
    interpreter: it imports only what it needs."""
    if run_function != DEFAULT_RUN_FUNCTION:
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(run_kinds.FIRST_IMPORTS)  # read when this process starts its forkserver (once)
    environment, note = worker_environment(allocator)
    if note and console is not None:
        console.print(note, highlight=False)
    start_forkserver(context, environment)
    return context


def start_forkserver(context: BaseContext, environment: dict[str, str] | None = None) -> None:
    """Start this process's forkserver, if it is not running, and wait until it has imported its preload. It starts
    with SIGTERM and SIGINT ignored (SIG_IGN is the one disposition that survives exec), in it and so in each worker
    it forks until the worker installs its own handlers (worker.work). The server must outlive a stop signal to the
    process group: the workers' exit statuses reach this process through it (with it gone, each worker would read as
    exited while it still records its stop), and a Ctrl-C during its imports ended it with a KeyboardInterrupt. A
    stop signal to this process while the server starts is held (blocked: Linux keeps a blocked signal pending
    whatever its disposition), then raised; one while it imports is raised at once (not inside starting_a_child,
    which would hold it for those seconds). ``environment``: variables the server starts with (this process's own
    are as they were after)."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        if not set(STOP_SIGNALS) & signal.sigpending():  # else raised as the mask is restored
            handlers = {signum: signal.signal(signum, signal.SIG_IGN) for signum in STOP_SIGNALS}
            try:
                with variables_set(environment or {}):
                    forkserver.ensure_running()
            finally:
                for signum, handler in handlers.items():
                    signal.signal(signum, signal.SIG_DFL if handler is None else handler)  # None: set outside Python
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
    probe = context.Process(target=int)  # forked once the server has imported its preload
    probe.start()
    probe.join()


@contextmanager
def variables_set(variables: dict[str, str]) -> Iterator[None]:
    """This process's environment with ``variables`` set, as it was after."""
    before = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def start_worker(context: BaseContext, run: PlannedRun, arguments: tuple, workers: list[Worker]) -> None:
    """Start the run's worker and add it to ``workers`` (a stop signal meanwhile is raised once it is added). The
    worker gets this process's environment as it is now: a forkserver's children would otherwise have the
    environment of the moment the server started."""
    receiving, sending = context.Pipe(duplex=False)
    ready = context.Event()
    process = context.Process(
        target=work, args=(sending, ready, dict(os.environ), run, *arguments), name=f"run-{run.run_id}"
    )
    try:
        with starting_a_child():
            process.start()
            workers.append(Worker(run, process, receiving, ready))
    finally:
        sending.close()  # the worker holds the only sending end: the pipe reads as closed once it is gone


def finished_workers(workers: list[Worker]) -> list[Worker]:
    """Wait until a worker sends its outcome or exits; the workers that have exited (outcomes read first). A pipe
    whose outcome was read is not waited on again: at its end it reads as ready at once, and waiting on it would spin
    this process on a core while the worker shuts down."""
    listening = [worker.outcomes for worker in workers if worker.listening]
    ready = wait(listening + [worker.process.sentinel for worker in workers])
    for worker in workers:
        if worker.listening and worker.outcomes in ready:
            receive_outcome(worker)
    finished = [worker for worker in workers if worker.process.sentinel in ready]
    for worker in finished:
        worker.process.join()
        worker.outcomes.close()
    return finished


def receive_outcome(worker: Worker) -> None:
    worker.listening = False
    try:
        worker.outcome = worker.outcomes.recv()
    except EOFError:  # it died before sending
        pass


def died_outcome(worker: Worker, root: Path) -> RunOutcome:
    """The outcome of a run whose worker exited without reporting: done if it wrote its result, else failed, with an
    error.json that says how the worker ended."""
    run_dir = run_directory(worker.run, root)
    if finished_result(run_dir) is not None:
        return RunOutcome("done", run_dir)
    error = RuntimeError(
        f"its worker process died while the run was in flight ({exit_description(worker.process.exitcode)})"
    )
    return record_failure(worker.run, run_dir, error, datetime.now(UTC))


def exit_description(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        return f"killed by signal {signal.Signals(-exitcode).name}" + (
            ": out of memory?" if -exitcode == signal.SIGKILL else ""
        )
    return f"exit code {exitcode}"


def stop(workers: list[Worker], signum: int, root: Path) -> None:
    """Forward ``signum`` to the workers still running, each once it is ready; wait for them to record their runs (a
    worker that has not within STOP_GRACE_SECONDS is killed, and its run recorded as killed); empties ``workers``."""
    deadline = time.monotonic() + STOP_GRACE_SECONDS
    for worker in workers:
        while worker.process.is_alive() and not worker.ready.wait(0.05) and time.monotonic() < deadline:
            pass
        if worker.process.is_alive():
            os.kill(worker.process.pid, signum)
    for worker in workers:
        worker.process.join(max(0.0, deadline - time.monotonic()))
        if worker.process.is_alive():
            worker.process.kill()
            worker.process.join()
        if worker.outcome is None and worker.outcomes.poll():
            receive_outcome(worker)
        if worker.outcome is None and worker.ready.is_set():  # one never ready had not claimed its run
            died_outcome(worker, root)
        worker.outcomes.close()
    workers.clear()
