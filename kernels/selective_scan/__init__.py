"""Selective scan of Mamba (Gu & Dao 2023): ops ``"selective_scan"`` and ``"selective_scan.step"``.

``h_t = exp(dt_t A) h_{t-1} + dt_t x_t B_t`` and ``y_t = C_t h_t + D x_t`` for every channel d of DI
and state n of N (A diagonal per channel, B_t and C_t shared by the channels). Backends: ``"torch"``
(chunk by chunk, any device) and on CUDA, each behind the kernel probe (``kernels.probe``),
``"mamba_ssm"`` where installed and ``"triton"`` (ours, ``kernels.selective_scan.triton``).
"""

import torch

from kernels.backends import resolve
from kernels.selective_scan import (  # noqa: F401  (register the backends)
    chunked,
    mamba_ssm_backend,
    probe_cases,
    recurrent,
    triton,  # noqa: F401  (registers backend "triton"; triton is imported on first use)
)
from kernels.selective_scan.checks import check_chunk_size, check_inputs


def selective_scan(
    x: torch.Tensor,
    dt: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    D: torch.Tensor | None = None,
    *,
    initial_state: torch.Tensor | None = None,
    return_state: bool = False,
    chunk_size: int = 8,
    backend: str = "auto",
):
    """Outputs y (B, S, DI) of the selective scan, plus the final state (B, DI, N) if ``return_state``.

    Args:
        x: (B, S, DI) inputs; dt: (B, S, DI) positive step sizes (softplus already applied);
        A: (DI, N) continuous-time state matrix (negative entries); B, C: (B, S, N) input and output
            projections; D: (DI,) skip weights or None.
        initial_state: (B, DI, N) state before the first step; default zeros.
        chunk_size: steps per chunk of the torch backend (any S works; the chunk bounds its memory).
        backend: ``"auto"``, ``"torch"``, ``"mamba_ssm"`` or ``"triton"``.
    """
    check_inputs(x, dt, A, B, C, D, initial_state)
    check_chunk_size(chunk_size)
    implementation = resolve("selective_scan", backend, x.device)
    options = dict(initial_state=initial_state, return_state=return_state, chunk_size=chunk_size)
    return implementation(x, dt, A, B, C, D, **options)


def selective_scan_step(
    x_t: torch.Tensor,
    dt_t: torch.Tensor,
    A: torch.Tensor,
    B_t: torch.Tensor,
    C_t: torch.Tensor,
    D: torch.Tensor | None,
    state: torch.Tensor,
    *,
    backend: str = "auto",
) -> tuple[torch.Tensor, torch.Tensor]:
    """One recurrent step: x_t, dt_t (B, DI), B_t, C_t (B, N), state (B, DI, N) -> y_t (B, DI), new state."""
    check_inputs(x_t[:, None], dt_t[:, None], A, B_t[:, None], C_t[:, None], D, state)
    implementation = resolve("selective_scan.step", backend, x_t.device)
    return implementation(x_t, dt_t, A, B_t, C_t, D, state)


def initial_state(batch: int, inner_dim: int, state_dim: int, *, dtype=None, device=None) -> torch.Tensor:
    """The zero state (B, DI, N) before the first step."""
    return torch.zeros(batch, inner_dim, state_dim, dtype=dtype, device=device)


__all__ = ["initial_state", "selective_scan", "selective_scan_step"]
