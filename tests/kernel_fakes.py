"""Fake optional backends of ``mlstm.chunkwise`` for the kernel probe's tests (tests/kernels/test_kernel_probe.py).

They are probed and rank above every real backend. A test enables some by ``enable`` (its monkeypatch registers
them and sets ``FAKES_VARIABLE``, both undone after the test); a probe child, which imports the module that
registered the backend it probes, finds that variable set and registers them on import. The fakes: ``abort`` aborts the process, as Triton 3.6's LLVM does on
TFLA; ``needs_workaround`` aborts unless ``WORKAROUND_VARIABLE=1`` (the shape of ``DISABLE_LLVM_OPT=1``); ``hang``
sleeps past any probe time-out; ``wrong`` returns the torch result with its features reversed; ``raises`` raises as a compile error
would.
"""

import os
import time

from kernels import backends
from kernels.backends import register, resolve

FAKES_VARIABLE = "XLSTM_SUITE_TEST_FAKE_KERNELS"
WORKAROUND_VARIABLE = "XLSTM_SUITE_TEST_WORKAROUND"
CALLS: list[str] = []  # the fakes that ran in this process


def _torch(*args, **kwargs):
    return resolve("mlstm.chunkwise", "torch", args[0].device)(*args, **kwargs)


def _abort(*args, **kwargs):
    CALLS.append("abort")
    os.abort()


def _needs_workaround(*args, **kwargs):
    CALLS.append("needs_workaround")
    if os.environ.get(WORKAROUND_VARIABLE) != "1":
        os.abort()
    return _torch(*args, **kwargs)


def _hang(*args, **kwargs):
    CALLS.append("hang")
    time.sleep(3600)


def _wrong(*args, **kwargs):
    CALLS.append("wrong")
    return _torch(*args, **kwargs).flip(-1)


def _raises(*args, **kwargs):
    CALLS.append("raises")
    raise RuntimeError("CompilationError: at 12:4: unsupported layout for tl.dot\nsecond line")


FAKES = {"abort": _abort, "needs_workaround": _needs_workaround, "hang": _hang, "wrong": _wrong, "raises": _raises}


def _register(names: list[str]) -> None:
    for name in names:
        register(
            "mlstm.chunkwise",
            f"fake_{name}",
            FAKES[name],
            priority=100 + list(FAKES).index(name),
            probed=True,
            workarounds=({WORKAROUND_VARIABLE: "1"},) if name == "needs_workaround" else (),
        )


def enable(monkeypatch, *names: str) -> None:
    """Register the fakes ``names`` for one test (in this process and in the probe children it starts)."""
    monkeypatch.setenv(FAKES_VARIABLE, ",".join(names))
    monkeypatch.setitem(backends._REGISTRY, "mlstm.chunkwise", dict(backends._REGISTRY["mlstm.chunkwise"]))
    _register(list(names))


if os.environ.get(FAKES_VARIABLE):  # in a probe child
    _register(os.environ[FAKES_VARIABLE].split(","))
