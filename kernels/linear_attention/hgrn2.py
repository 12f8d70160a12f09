"""HGRN2's recurrence (Qin et al. 2024): HGRN with its state expanded by an outer product.

    S_t = diag(f_t) S_{t-1} + (1 - f_t) i_t^T,    o_t = scale * q_t^T S_t

The forget gate f_t in (0, 1] per key dim doubles as the input gate 1 - f_t in the key's place: this
is gated linear attention with k = 1 - exp(log f), and runs on the ``gla`` op (and its backends).
"""

import torch

from kernels.linear_attention.checks import check_shape
from kernels.linear_attention.gla import gla, gla_step


def hgrn2(
    q: torch.Tensor,
    log_forget: torch.Tensor,
    i: torch.Tensor,
    *,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    return_state: bool = False,
    chunk_size: int = 8,
    backend: str = "auto",
):
    """Outputs o (B, S, NH, DV), plus the final state (B, NH, DK, DV) if ``return_state``.

    q, log_forget: (B, S, NH, DK) with log_forget <= 0; i: (B, S, NH, DV). Other arguments as ``gla``
    (scale defaults to DK ** -0.5, as flash-linear-attention's HGRN2 layer).
    """
    check_shape("log_forget", log_forget, tuple(q.shape))
    k = -torch.expm1(log_forget)  # input gate 1 - f
    return gla(
        q,
        k,
        i,
        log_forget,
        scale=scale,
        initial_state=initial_state,
        return_state=return_state,
        chunk_size=chunk_size,
        backend=backend,
    )


def hgrn2_step(
    q_t: torch.Tensor,
    log_forget_t: torch.Tensor,
    i_t: torch.Tensor,
    state: torch.Tensor,
    *,
    scale: float | None = None,
    backend: str = "auto",
) -> tuple[torch.Tensor, torch.Tensor]:
    """One step: q_t, log_forget_t (B, NH, DK), i_t (B, NH, DV), state (B, NH, DK, DV) -> o_t (B, NH, DV), new state."""
    check_shape("log_forget_t", log_forget_t, tuple(q_t.shape))
    return gla_step(q_t, -torch.expm1(log_forget_t), i_t, log_forget_t, state, scale=scale, backend=backend)
