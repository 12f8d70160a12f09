"""Stop signals as an exception: SIGTERM (a scheduler's end of job, `timeout`, a container stop, `kill`) and SIGINT
(Ctrl-C) raise Stopped in the main thread of a command, so that its ``finally`` blocks release claims and remove
temporary files, a run's error.json names the signal, and the command ends with one line and exit code 128 + N, the
shell's code for death by signal N (130 for SIGINT, 143 for SIGTERM).

Stopped is a BaseException but neither an Exception (an ``except Exception`` that records a run's failure lets it
pass to the code that records a stop) nor a KeyboardInterrupt (Lightning turns that into sys.exit(1); and to a
SIGTERM without a handler of ours it answers at the next batch with a SystemExit without a code: exit code 0).
While it fits, Lightning's trainer puts its own SIGTERM handler in front of ours and calls ours after it. Only the
first stop signal raises: later ones arrive while the first unwinds, and would interrupt its cleanup.

STOP_SIGNALS is the one table of the signals that stop a command; a signal with another meaning (SLURM's requeue
signal, issue 37) gets a handler of its own, installed beside these in the same way.
"""

import signal
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


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


@dataclass
class _Handling:
    installed: bool = False  # the handlers are ours (nested uses change nothing)
    stopped: int | None = None  # the signal that raised Stopped; later ones are ignored
    deferring: bool = False  # hold a stop until the block that defers it ends
    deferred: int | None = None


_HANDLING = _Handling()


def _raise_once(signum: int, frame) -> None:
    if _HANDLING.stopped is not None:
        return
    if _HANDLING.deferring:
        _HANDLING.deferred = signum
        return
    _HANDLING.stopped = signum
    raise Stopped(signum)


@contextmanager
def stop_signals_raise() -> Iterator[None]:
    """While inside, the first stop signal raises Stopped in the main thread; later ones are ignored. Nested uses,
    and uses outside the main thread (where Python cannot set handlers), change nothing."""
    if _HANDLING.installed or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    _HANDLING.installed, _HANDLING.stopped = True, None
    for signum in STOP_SIGNALS:
        signal.signal(signum, _raise_once)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)  # None: set outside Python
        _HANDLING.installed = False


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
    _HANDLING.deferring = True
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        _HANDLING.deferring = False
        deferred, _HANDLING.deferred = _HANDLING.deferred, None
        if deferred is not None and _HANDLING.stopped is None:
            _HANDLING.stopped = deferred
            raise Stopped(deferred)
