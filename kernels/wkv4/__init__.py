"""WKV of RWKV-4 (Peng et al. 2023): ops ``"wkv4"`` (chunked, torch) and ``"wkv4.step"`` (recurrent).

``wkv_t = (sum_{i<t} e^{-(t-1-i) w + k_i} v_i + e^{u + k_t} v_t) / (sum_{i<t} e^{-(t-1-i) w + k_i} + e^{u + k_t})``
per channel, with ``w = exp(time_decay)`` and ``u = time_first``. Both forms keep the sums scaled by the
exp of a running max (``WKV4State``), as the reference CUDA kernel does. The paper's kernel library
offers no RWKV-4 kernel, so torch is the only backend.
"""

import torch

from kernels.backends import resolve
from kernels.wkv4 import chunked, recurrent  # noqa: F401  (register the backends)
from kernels.wkv4.state import WKV4State, check_inputs, initial_state


def wkv4(
    time_decay: torch.Tensor,
    time_first: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    initial_state: WKV4State | None = None,
    return_state: bool = False,
    chunk_size: int = 8,
    backend: str = "auto",
):
    """WKV outputs (B, S, C) for keys and values k, v (B, S, C), plus the final state if ``return_state``.

    time_decay, time_first: (C,); initial_state: the state before the first step (default: empty);
    chunk_size: steps per chunk of the torch backend (any S works).
    """
    check_inputs(time_decay, time_first, k, v, initial_state)
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive int; got {chunk_size!r}")
    implementation = resolve("wkv4", backend, k.device)
    options = dict(initial_state=initial_state, return_state=return_state, chunk_size=chunk_size)
    return implementation(time_decay, time_first, k, v, **options)


def wkv4_step(
    time_decay: torch.Tensor,
    time_first: torch.Tensor,
    k_t: torch.Tensor,
    v_t: torch.Tensor,
    state: WKV4State,
    *,
    backend: str = "auto",
) -> tuple[torch.Tensor, WKV4State]:
    """One recurrent step: k_t, v_t (B, C) -> wkv_t (B, C) and the new state."""
    check_inputs(time_decay, time_first, k_t[:, None], v_t[:, None], state)
    implementation = resolve("wkv4.step", backend, k_t.device)
    return implementation(time_decay, time_first, k_t, v_t, state)


__all__ = ["WKV4State", "initial_state", "wkv4", "wkv4_step"]
