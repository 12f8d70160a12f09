"""Gated linear attention (Yang et al. 2023): a data-dependent decay per key dimension.

    S_t = diag(exp(a_t)) S_{t-1} + k_t v_t^T,    o_t = scale * q_t^T S_t

Ops ``"gla"`` (a sequence, chunkwise) and ``"gla.step"`` (one step) in ``kernels.backends``.
"""

import torch

from kernels.backends import register, resolve
from kernels.linear_attention.checks import check_chunk_size, check_heads, check_shape
from kernels.linear_attention.chunkwise import chunkwise_gated_attention


def gla_torch(q, k, v, log_decay, *, scale, initial_state, return_state, chunk_size):
    heads_first = [x.transpose(1, 2) for x in (q * scale, k, v, log_decay)]  # (B, NH, S, D*)
    o, state = chunkwise_gated_attention(
        *heads_first, initial_state=initial_state, exclusive=False, chunk_size=chunk_size
    )
    o = o.transpose(1, 2)  # (B, S, NH, DV)
    return (o, state) if return_state else o


def gla_step_torch(q_t, k_t, v_t, log_decay_t, state, *, scale):
    state = torch.exp(log_decay_t)[..., None] * state + k_t[..., :, None] * v_t[..., None, :]  # (B, NH, DK, DV)
    o_t = ((q_t * scale)[..., None, :] @ state).squeeze(-2)  # (B, NH, DV)
    return o_t, state


register("gla", "torch", gla_torch)
register("gla.step", "torch", gla_step_torch)


def gla(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    log_decay: torch.Tensor,
    *,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    return_state: bool = False,
    chunk_size: int = 8,
    backend: str = "auto",
):
    """Outputs o (B, S, NH, DV), plus the final state (B, NH, DK, DV) if ``return_state``.

    Args:
        q, k: (B, S, NH, DK); v: (B, S, NH, DV); log_decay: (B, S, NH, DK), log of the decay (<= 0).
        scale: multiplies q; default DK ** -0.5 (as flash-linear-attention).
        initial_state: (B, NH, DK, DV) state before the first step; default zeros.
        chunk_size: steps per chunk of the torch backend, rounded down to a power of two.
        backend: ``"auto"``, ``"torch"`` or, on CUDA with flash-linear-attention installed, ``"fla"``.
    """
    check_heads(q, k, v, initial_state, step=False)
    check_shape("log_decay", log_decay, tuple(q.shape))
    check_chunk_size(chunk_size)
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    implementation = resolve("gla", backend, q.device)
    return implementation(
        q, k, v, log_decay, scale=scale, initial_state=initial_state, return_state=return_state, chunk_size=chunk_size
    )


def gla_step(
    q_t: torch.Tensor,
    k_t: torch.Tensor,
    v_t: torch.Tensor,
    log_decay_t: torch.Tensor,
    state: torch.Tensor,
    *,
    scale: float | None = None,
    backend: str = "auto",
) -> tuple[torch.Tensor, torch.Tensor]:
    """One step: q_t, k_t, log_decay_t (B, NH, DK), v_t (B, NH, DV), state (B, NH, DK, DV).

    Returns o_t (B, NH, DV) and the new state.
    """
    check_heads(q_t, k_t, v_t, state, step=True)
    check_shape("log_decay_t", log_decay_t, tuple(q_t.shape))
    scale = q_t.shape[-1] ** -0.5 if scale is None else scale
    return resolve("gla.step", backend, q_t.device)(q_t, k_t, v_t, log_decay_t, state, scale=scale)
