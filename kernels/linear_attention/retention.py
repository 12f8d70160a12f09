"""Retention (RetNet, Sun et al. 2023) and its data-dependent form: one scalar decay per head.

    S_t = exp(a_t) S_{t-1} + k_t v_t^T,    o_t = scale * q_t^T S_t

RetNet fixes a_t = log(1 - 2^(-5 - h)) for head h (``retnet_log_decays``); a data-dependent a_t per
head and step gives "simple GLA". Ops ``"retention"`` and ``"retention.step"`` in ``kernels.backends``.
"""

import torch

from kernels.backends import register, resolve
from kernels.linear_attention.checks import check_chunk_size, check_heads, check_shape
from kernels.linear_attention.chunkwise import chunkwise_gated_attention


def retnet_log_decays(num_heads: int, *, dtype=None, device=None) -> torch.Tensor:
    """RetNet's fixed per-head log decays log(1 - 2^(-5 - h)), h = 0..NH-1: shape (NH,)."""
    heads = torch.arange(num_heads, dtype=dtype or torch.get_default_dtype(), device=device)
    return torch.log1p(-torch.exp2(-5.0 - heads))


def _per_step_log_decay(log_decay: torch.Tensor, batch: int, length: int) -> torch.Tensor:
    """(NH,) or (B, S, NH) -> (B, NH, S, 1)."""
    if log_decay.dim() == 1:
        return log_decay[None, :, None, None].expand(batch, -1, length, 1)
    return log_decay.transpose(1, 2)[..., None]


def retention_torch(q, k, v, log_decay, *, scale, initial_state, return_state, chunk_size):
    B, S = q.shape[:2]
    heads_first = [x.transpose(1, 2) for x in (q * scale, k, v)]  # (B, NH, S, D*)
    log_decay = _per_step_log_decay(log_decay, B, S)  # (B, NH, S, 1)
    o, state = chunkwise_gated_attention(
        *heads_first, log_decay, initial_state=initial_state, exclusive=False, chunk_size=chunk_size
    )
    o = o.transpose(1, 2)  # (B, S, NH, DV)
    return (o, state) if return_state else o


def retention_step_torch(q_t, k_t, v_t, log_decay_t, state, *, scale):
    decay = torch.exp(log_decay_t)[..., None, None]  # (NH, 1, 1) or (B, NH, 1, 1)
    state = decay * state + k_t[..., :, None] * v_t[..., None, :]  # (B, NH, DK, DV)
    o_t = ((q_t * scale)[..., None, :] @ state).squeeze(-2)  # (B, NH, DV)
    return o_t, state


register("retention", "torch", retention_torch)
register("retention.step", "torch", retention_step_torch)


def _check_log_decay(name: str, log_decay: torch.Tensor, per_step_shape: tuple) -> None:
    if log_decay.dim() == 1:
        check_shape(name, log_decay, (per_step_shape[-1],))
    else:
        check_shape(name, log_decay, per_step_shape)


def retention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    log_decay: torch.Tensor,
    *,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    return_state: bool = False,
    chunk_size: int = 64,
    backend: str = "auto",
):
    """Outputs o (B, S, NH, DV), plus the final state (B, NH, DK, DV) if ``return_state``.

    Args:
        q, k: (B, S, NH, DK); v: (B, S, NH, DV).
        log_decay: (NH,) fixed per head (RetNet) or (B, S, NH) per step; log of the decay (<= 0).
        scale: multiplies q; default DK ** -0.5 (as RetNet and flash-linear-attention).
        initial_state: (B, NH, DK, DV) state before the first step; default zeros.
        chunk_size: steps per chunk of the torch backend, rounded down to a power of two.
        backend: ``"auto"``, ``"torch"`` or, on CUDA with flash-linear-attention installed, ``"fla"``.
    """
    check_heads(q, k, v, initial_state, step=False)
    _check_log_decay("log_decay", log_decay, tuple(q.shape[:3]))
    check_chunk_size(chunk_size)
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    implementation = resolve("retention", backend, q.device)
    return implementation(
        q, k, v, log_decay, scale=scale, initial_state=initial_state, return_state=return_state, chunk_size=chunk_size
    )


def retention_step(
    q_t: torch.Tensor,
    k_t: torch.Tensor,
    v_t: torch.Tensor,
    log_decay_t: torch.Tensor,
    state: torch.Tensor,
    *,
    scale: float | None = None,
    backend: str = "auto",
) -> tuple[torch.Tensor, torch.Tensor]:
    """One step: q_t, k_t (B, NH, DK), v_t (B, NH, DV), log_decay_t (NH,) or (B, NH), state (B, NH, DK, DV)."""
    check_heads(q_t, k_t, v_t, state, step=True)
    _check_log_decay("log_decay_t", log_decay_t, tuple(q_t.shape[:2]))
    scale = q_t.shape[-1] ** -0.5 if scale is None else scale
    return resolve("retention.step", backend, q_t.device)(q_t, k_t, v_t, log_decay_t, state, scale=scale)
