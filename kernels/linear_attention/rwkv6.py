"""RWKV-6's WKV (Peng et al. 2024, "Finch"): data-dependent decay per key dim and a bonus u for the current token.

    o_t = scale * r_t^T (S_{t-1} + diag(u) k_t v_t^T),    S_t = diag(exp(w_t)) S_{t-1} + k_t v_t^T

with log decays w_t <= 0 (RWKV-6 uses w = -exp(raw decay)). The state part is the exclusive form of
the chunkwise core; the bonus is a per-token term. Ops ``"rwkv6"`` and ``"rwkv6.step"``.
"""

import torch

from kernels.backends import register, resolve
from kernels.linear_attention.checks import check_chunk_size, check_heads, check_shape
from kernels.linear_attention.chunkwise import chunkwise_gated_attention


def _bonus_term(r, k, v, bonus):
    """The current token's own contribution (r . (u * k)) v: (..., NH, DV)."""
    return (r * bonus * k).sum(-1, keepdim=True) * v


def rwkv6_torch(r, k, v, log_decay, bonus, *, scale, initial_state, return_state, chunk_size):
    r = r * scale
    heads_first = [x.transpose(1, 2) for x in (r, k, v, log_decay)]  # (B, NH, S, D*)
    o, state = chunkwise_gated_attention(
        *heads_first, initial_state=initial_state, exclusive=True, chunk_size=chunk_size
    )
    o = o.transpose(1, 2) + _bonus_term(r, k, v, bonus)  # (B, S, NH, DV)
    return (o, state) if return_state else o


def rwkv6_step_torch(r_t, k_t, v_t, log_decay_t, bonus, state, *, scale):
    r_t = r_t * scale
    o_t = (r_t[..., None, :] @ state).squeeze(-2) + _bonus_term(r_t, k_t, v_t, bonus)  # (B, NH, DV)
    state = torch.exp(log_decay_t)[..., None] * state + k_t[..., :, None] * v_t[..., None, :]  # (B, NH, DK, DV)
    return o_t, state


register("rwkv6", "torch", rwkv6_torch)
register("rwkv6.step", "torch", rwkv6_step_torch)


def rwkv6(
    r: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    log_decay: torch.Tensor,
    bonus: torch.Tensor,
    *,
    scale: float = 1.0,
    initial_state: torch.Tensor | None = None,
    return_state: bool = False,
    chunk_size: int = 8,
    backend: str = "auto",
):
    """Outputs o (B, S, NH, DV), plus the final state (B, NH, DK, DV) if ``return_state``.

    Args:
        r, k: (B, S, NH, DK) receptance and key; v: (B, S, NH, DV); log_decay: (B, S, NH, DK), <= 0.
        bonus: (NH, DK), the weight u of the current token.
        scale: multiplies r; RWKV-6 uses 1 (no scaling).
        initial_state: (B, NH, DK, DV) state before the first step; default zeros.
        chunk_size: steps per chunk of the torch backend, rounded down to a power of two.
        backend: ``"auto"``, ``"torch"`` or, on CUDA with flash-linear-attention installed, ``"fla"``.
    """
    check_heads(r, k, v, initial_state, step=False)
    check_shape("log_decay", log_decay, tuple(r.shape))
    check_shape("bonus", bonus, tuple(r.shape[-2:]))
    check_chunk_size(chunk_size)
    implementation = resolve("rwkv6", backend, r.device)
    return implementation(
        r,
        k,
        v,
        log_decay,
        bonus,
        scale=scale,
        initial_state=initial_state,
        return_state=return_state,
        chunk_size=chunk_size,
    )


def rwkv6_step(
    r_t: torch.Tensor,
    k_t: torch.Tensor,
    v_t: torch.Tensor,
    log_decay_t: torch.Tensor,
    bonus: torch.Tensor,
    state: torch.Tensor,
    *,
    scale: float = 1.0,
    backend: str = "auto",
) -> tuple[torch.Tensor, torch.Tensor]:
    """One step: r_t, k_t, log_decay_t (B, NH, DK), v_t (B, NH, DV), bonus (NH, DK), state (B, NH, DK, DV)."""
    check_heads(r_t, k_t, v_t, state, step=True)
    check_shape("log_decay_t", log_decay_t, tuple(r_t.shape))
    check_shape("bonus", bonus, tuple(r_t.shape[-2:]))
    return resolve("rwkv6.step", backend, r_t.device)(r_t, k_t, v_t, log_decay_t, bonus, state, scale=scale)
