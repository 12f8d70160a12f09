"""Registry of kernel backends: every op has a torch reference and optional fast implementations.

An op is looked up by name (``"mlstm.chunkwise"``) and backend (``"auto"``, ``"torch"``, or a
registered optional backend such as ``"mlstm_kernels"``). ``auto`` picks the first registered
backend that is available for the tensors' device, in priority order, falling back to torch.

An optional GPU backend (a Triton or CUDA kernel of a package, or one of ours) is registered with
``probed=True``: before it first runs on a given stack, device, dtype and shape class it must pass a
probe in a child process (``kernels.probe``), since a compiler can abort the whole process. ``auto``
skips a backend whose probe fails, with one line; a backend asked for by name raises instead.
"""

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class Backend:
    name: str
    function: Callable
    is_available: Callable[[torch.device], bool]
    priority: int
    probed: bool = False  # run only after kernels.probe has passed it
    module: str = ""  # the module whose import registers it (what a probe child imports)
    packages: tuple[str, ...] = ()  # distributions whose versions key its probe verdicts
    workarounds: tuple[tuple[tuple[str, str], ...], ...] = ()  # environments to retry a failed probe with


@dataclass(frozen=True)
class ProbeCase:
    """How to probe the backends of one op on a tiny input.

    ``shape_class(*args, **kwargs)``: the few sizes of a call that decide which kernel code is compiled (head
    dims, say), as ((name, value), ...); ``inputs(shape_class, device, dtype)``: the tiny (args, kwargs) of a
    call of that class; ``loss(result)``: a scalar of the result whose value and input gradients every correct
    backend agrees on."""

    shape_class: Callable[..., tuple[tuple[str, int], ...]]
    inputs: Callable[[dict[str, int], torch.device, torch.dtype], tuple[tuple, dict[str, Any]]]
    loss: Callable[[Any], torch.Tensor]


_REGISTRY: dict[str, dict[str, Backend]] = {}
_PROBE_CASES: dict[str, ProbeCase] = {}


def register(
    op: str,
    name: str,
    function: Callable,
    *,
    is_available=lambda device: True,
    priority: int = 0,
    probed: bool = False,
    packages: tuple[str, ...] = (),
    workarounds: tuple[dict[str, str], ...] = (),
) -> None:
    """Register ``function`` as backend ``name`` of ``op``; higher priority wins under ``auto``.

    ``probed``: ``kernels.probe`` must pass it before it runs (the op needs a ``register_probe_case``);
    ``packages``: the distributions it runs on (their versions key its verdicts); ``workarounds``: environment
    settings under which to retry a failed probe (e.g. ``{"DISABLE_LLVM_OPT": "1"}``), applied only if needed."""
    module = sys._getframe(1).f_globals.get("__name__", "")
    frozen_workarounds = tuple(tuple(sorted(environment.items())) for environment in workarounds)
    _REGISTRY.setdefault(op, {})[name] = Backend(
        name, function, is_available, priority, probed, module, packages, frozen_workarounds
    )


def register_probe_case(op: str, case: ProbeCase) -> None:
    """The tiny input on which the probed backends of ``op`` are checked against its torch backend."""
    _PROBE_CASES[op] = case


def probe_case(op: str) -> ProbeCase:
    if op not in _PROBE_CASES:
        raise KeyError(f"op {op!r} has probed backends but no probe case; ops with one: {sorted(_PROBE_CASES)}")
    return _PROBE_CASES[op]


def backend(op: str, name: str) -> Backend:
    if op not in _REGISTRY:
        raise KeyError(f"unknown kernel op {op!r}; known ops: {sorted(_REGISTRY)}")
    choices = _REGISTRY[op]
    if name not in choices:
        raise ValueError(
            f"unknown backend {name!r} for {op}; valid choices: ['auto', {', '.join(map(repr, sorted(choices)))}]"
        )
    return choices[name]


def backends_of(op: str) -> list[str]:
    return sorted(_REGISTRY.get(op, {}))


def available(op: str, device: torch.device) -> list[Backend]:
    """The backends of ``op`` available on ``device``, in the order ``auto`` tries them."""
    if op not in _REGISTRY:
        raise KeyError(f"unknown kernel op {op!r}; known ops: {sorted(_REGISTRY)}")
    return sorted((b for b in _REGISTRY[op].values() if b.is_available(device)), key=lambda b: -b.priority)


def resolve(op: str, backend_name: str, device: torch.device) -> Callable:
    """The function implementing ``op`` on ``backend_name`` for tensors on ``device``.

    Where a probed backend could run, the function returned checks its probe verdict for each call's dtype and
    shape class (cached: one dictionary lookup after the first call) before running it."""
    if backend_name == "auto":
        usable = available(op, device)
        if not usable[0].probed:
            return usable[0].function
        from kernels.probe import first_passing

        return lambda *args, **kwargs: first_passing(op, usable, args, kwargs)(*args, **kwargs)
    chosen = backend(op, backend_name)
    if not chosen.is_available(device):
        raise RuntimeError(
            f"backend {backend_name!r} for {op} is not available on device {device}; use backend='torch' or 'auto'"
        )
    if not chosen.probed:
        return chosen.function
    from kernels.probe import require_passed

    return lambda *args, **kwargs: require_passed(op, chosen, args, kwargs)(*args, **kwargs)
