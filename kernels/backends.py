"""Registry of kernel backends: every op has a torch reference and optional fast implementations.

An op is looked up by name (``"mlstm.chunkwise"``) and backend (``"auto"``, ``"torch"``, or a
registered optional backend such as ``"mlstm_kernels"``). ``auto`` picks the first registered
backend that is available for the tensors' device, in priority order, falling back to torch.
"""

from dataclasses import dataclass
from typing import Callable

import torch


@dataclass(frozen=True)
class Backend:
    name: str
    function: Callable
    is_available: Callable[[torch.device], bool]
    priority: int


_REGISTRY: dict[str, dict[str, Backend]] = {}


def register(op: str, name: str, function: Callable, *, is_available=lambda device: True, priority: int = 0) -> None:
    """Register ``function`` as backend ``name`` of ``op``; higher priority wins under ``auto``."""
    _REGISTRY.setdefault(op, {})[name] = Backend(name, function, is_available, priority)


def backends_of(op: str) -> list[str]:
    return sorted(_REGISTRY.get(op, {}))


def resolve(op: str, backend: str, device: torch.device) -> Callable:
    """The function implementing ``op`` on ``backend`` for tensors on ``device``."""
    if op not in _REGISTRY:
        raise KeyError(f"unknown kernel op {op!r}; known ops: {sorted(_REGISTRY)}")
    choices = _REGISTRY[op]
    if backend == "auto":
        usable = sorted((b for b in choices.values() if b.is_available(device)), key=lambda b: -b.priority)
        return usable[0].function
    if backend not in choices:
        raise ValueError(f"unknown backend {backend!r} for {op}; valid choices: ['auto', {', '.join(map(repr, sorted(choices)))}]")
    chosen = choices[backend]
    if not chosen.is_available(device):
        raise RuntimeError(f"backend {backend!r} for {op} is not available on device {device}; use backend='torch' or 'auto'")
    return chosen.function
