"""Stop signals as an exception: SIGTERM (a scheduler's end of job, `timeout`, a container stop, `kill`) and SIGINT
(Ctrl-C) raise Stopped in the main thread of a command, so that its ``finally`` blocks release claims and remove
temporary files, a run's error.json names the signal, and the command ends with one line and exit code 128 + N, the
shell's code for death by signal N (130 for SIGINT, 143 for SIGTERM).

Stopped is a BaseException but neither an Exception (an ``except Exception`` that records a run's failure lets it
pass to the code that records a stop) nor a KeyboardInterrupt (Lightning turns that into sys.exit(1); and to a
SIGTERM without a handler of ours it answers at the next batch with a SystemExit without a code: exit code 0).
While it fits, Lightning's trainer puts its own SIGTERM handler in front of ours and calls ours after it. Only the
first stop signal raises: later ones arrive while the first unwinds, and would interrupt its cleanup.

STOP_SIGNALS is the one table of the signals that stop a command. Beside them, in a SLURM job, REQUEUE_SIGNAL
(SIGUSR1, which configs/launcher/slurm.yaml asks SLURM to send 120 s before the time limit) only notes that it came:
a handler that did more (Lightning's saves a checkpoint, with a barrier, inside whatever the process was doing) could
wait for a process of the run that is inside another collective and never comes. Training asks requeue_requested()
at each step boundary, where every process of the run agrees on it (agree_to_requeue), saves the run together and
stops with stopping_for_requeue(); the job's rank 0 then requeues it (experiments.sweeps.hydra_worker). The handler is
installed with the others, when the worker starts: a USR1 during data preparation waits for the first step.
"""

import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
REQUEUE_SIGNAL = signal.SIGUSR1  # SLURM's warning before the time limit (--signal=USR1@120): requeue, in a SLURM job
SLURM_JOB_VARIABLE = "SLURM_JOB_ID"  # set in every process of a SLURM job


class Stopped(BaseException):
    """A stop signal arrived; ``signum`` says which."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum

    @property
    def requeues(self) -> bool:
        """Stopped at a step boundary for SLURM's requeue signal (stopping_for_requeue), the run saved."""
        return self.signum == REQUEUE_SIGNAL


@dataclass
class _Handling:
    installed: bool = False  # the handlers are ours (nested uses change nothing)
    stopped: int | None = None  # the signal that raised Stopped; later ones are ignored
    deferring: bool = False  # hold a stop until the block that defers it ends
    deferred: int | None = None
    requeue_requested: bool = False  # REQUEUE_SIGNAL arrived (in a SLURM job)


_HANDLING = _Handling()


def _raise_once(signum: int, frame) -> None:
    if _HANDLING.stopped is not None:
        return
    if _HANDLING.deferring:
        _HANDLING.deferred = signum
        return
    _HANDLING.stopped = signum
    raise Stopped(signum)


def _note_requeue(signum: int, frame) -> None:
    _HANDLING.requeue_requested = True


def handled_signals() -> dict[int, Callable]:
    """Each signal this process handles and its handler: the stop signals, and in a SLURM job the requeue signal."""
    handlers = dict.fromkeys(STOP_SIGNALS, _raise_once)
    if SLURM_JOB_VARIABLE in os.environ:
        handlers[REQUEUE_SIGNAL] = _note_requeue
    return handlers


@contextmanager
def stop_signals_raise() -> Iterator[None]:
    """While inside, the first stop signal raises Stopped in the main thread; later ones are ignored; in a SLURM job,
    the requeue signal is noted (requeue_requested). Nested uses, and uses outside the main thread (where Python
    cannot set handlers), change nothing."""
    if _HANDLING.installed or threading.current_thread() is not threading.main_thread():
        yield
        return
    handlers = handled_signals()
    previous = {signum: signal.getsignal(signum) for signum in handlers}
    _HANDLING.installed, _HANDLING.stopped, _HANDLING.requeue_requested = True, None, False
    for signum, handler in handlers.items():
        signal.signal(signum, handler)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)  # None: set outside Python
        _HANDLING.installed, _HANDLING.requeue_requested = False, False


@contextmanager
def starting_a_child() -> Iterator[None]:
    """Around starting a child process (within stop_signals_raise). The child starts with SIGINT ignored (SIG_IGN is
    the one disposition that survives exec), so a Ctrl-C to the whole process group while it still imports is no
    KeyboardInterrupt traceback there: it installs its own handlers once it is ready, and its parent forwards the
    stop then. A SIGTERM to this process meanwhile is held and raised once the child is started, so that no started
    child goes unnoticed; a Ctrl-C in those milliseconds is lost (a second one stops)."""
    if not _HANDLING.installed or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with stops_held():
            yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextmanager
def stops_held() -> Iterator[None]:
    """A stop signal inside (within stop_signals_raise) is held and raised as Stopped once the block has finished: for
    work that an exception in its middle would spoil rather than stop (a checkpoint's write, whose file writer, cut
    off, raises an error of its own in place of the stop). Nested uses hold until the outermost ends."""
    if _HANDLING.deferring or not _HANDLING.installed or threading.current_thread() is not threading.main_thread():
        yield
        return
    _HANDLING.deferring = True
    try:
        yield
    finally:
        _HANDLING.deferring = False
        deferred, _HANDLING.deferred = _HANDLING.deferred, None
        if deferred is not None and _HANDLING.stopped is None:
            _HANDLING.stopped = deferred
            raise Stopped(deferred)


def requeue_requested() -> bool:
    """Whether SLURM's requeue signal reached this process (within stop_signals_raise, in a SLURM job)."""
    return _HANDLING.requeue_requested


def agree_to_requeue(any_process: Callable[[bool], bool]) -> bool:
    """At a step boundary, which every process of a run reaches in the same order: whether the requeue signal reached
    any of them (``any_process`` reduces this process's answer over all of them, e.g. an all-reduce; on one process,
    the answer itself). Asked at every boundary, by every process, so that each collective has all of them."""
    return any_process(requeue_requested())


def stopping_for_requeue() -> Stopped:
    """The Stopped to raise once the run is saved for a requeue; from here on stop signals are ignored (SLURM's
    requeue ends the job's processes with SIGTERM while they leave)."""
    _HANDLING.stopped = REQUEUE_SIGNAL
    return Stopped(REQUEUE_SIGNAL)
