"""RWKV-5 ("Eagle", Peng et al. 2024) multi-head WKV with matrix-valued states: ops ``"wkv5"`` and ``"wkv5.step"``.

Per head, with key/value channels of size DH, a decay ``w = exp(log_decay)`` per key channel (RWKV-5's
``exp(-exp(time_decay))``) and a bonus ``u`` per key channel (``time_faaaa``)::

    y_t = r_t^T (S_{t-1} + diag(u) k_t v_t^T)        S_t = diag(w) S_{t-1} + k_t v_t^T

The torch backend is chunked: within a chunk of L steps the weights ``w^(i-1-j)`` are folded into r and k around the
chunk's middle (one matmul) where the decays allow it without overflow, else formed pair by pair (exponents never
positive, so no overflow for any decay); across chunks the (DH x DH) state carries the past.
"""

import torch

from kernels.backends import register, resolve


def _check(r, k, v, log_decay, bonus, state) -> None:
    if r.dim() != 4 or k.shape != r.shape or v.shape != r.shape:
        raise ValueError(
            f"wkv5 expects r, k, v of one shape (B, NH, S, DH); got {tuple(r.shape)}, "
            f"{tuple(k.shape)}, {tuple(v.shape)}"
        )
    B, NH, _, DH = r.shape
    if log_decay.shape != (NH, DH) or bonus.shape != (NH, DH):
        raise ValueError(
            f"wkv5 expects log_decay and bonus of shape (NH, DH) = {(NH, DH)}; got "
            f"{tuple(log_decay.shape)}, {tuple(bonus.shape)}"
        )
    if state is not None and state.shape != (B, NH, DH, DH):
        raise ValueError(f"wkv5 state must have shape (B, NH, DH, DH) = {(B, NH, DH, DH)}; got {tuple(state.shape)}")


FACTORISED_EXPONENT_LIMIT = 60.0  # e^60 ~ 1e26: a factor of the factorised scores, far inside float32's range


def factorised_scores_fit(log_decay: torch.Tensor, L: int) -> bool:
    """Whether w^(i-1-j) may be split into w^(i-1-m) w^(m-j) around the chunk's middle m: every factor, and every
    product above the diagonal (masked, but computed), stays below e^FACTORISED_EXPONENT_LIMIT."""
    return bool(log_decay.detach().min() * L > -FACTORISED_EXPONENT_LIMIT)


def _pairwise_scores(r, k, log_decay, L):
    """r_i^T diag(w^(i-1-j)) k_j for j < i, else 0, from the (L, L, DH) pair weights (no overflow for any decay);
    r, k (B, NH, NC, L, DH) -> (B, NH, NC, L, L)."""
    position = torch.arange(L, device=r.device, dtype=r.dtype)  # (L,)
    lag = position[:, None] - 1 - position[None, :]  # (L, L): i - 1 - j
    pair_decay = torch.exp(lag.clamp(min=0)[None, :, :, None] * log_decay[:, None, None, :])  # (NH, L, L, DH)
    pair_decay = pair_decay * (lag >= 0)[None, :, :, None]
    return torch.einsum("bhcid,hijd,bhcjd->bhcij", r, pair_decay, k)


def _factorised_scores(r, k, log_decay, L):
    """The same scores as one matmul: w^(i-1-j) = w^(i-1-m) w^(m-j) with m = L // 2, the decays folded into r and k
    (factorised_scores_fit says when that is safe); (B, NH, NC, L, DH) -> (B, NH, NC, L, L)."""
    position = torch.arange(L, device=r.device, dtype=r.dtype)  # (L,)
    middle = L // 2
    r_scaled = r * torch.exp((position - 1 - middle)[:, None] * log_decay[:, None, :])[:, None]  # (B, NH, NC, L, DH)
    k_scaled = k * torch.exp((middle - position)[:, None] * log_decay[:, None, :])[:, None]  # (B, NH, NC, L, DH)
    causal = position[:, None] > position[None, :]  # (L, L): j < i
    return torch.where(causal, r_scaled @ k_scaled.transpose(-2, -1), 0.0)


def _full_chunks(r, k, v, log_decay, bonus, state, L):
    """Outputs and final state for S a multiple of L; r, k, v (B, NH, S, DH), state (B, NH, DH, DH)."""
    B, NH, S, DH = r.shape
    NC = S // L
    r, k, v = (x.reshape(B, NH, NC, L, DH) for x in (r, k, v))
    position = torch.arange(L, device=r.device, dtype=r.dtype)  # (L,)
    scores_of = _factorised_scores if factorised_scores_fit(log_decay, L) else _pairwise_scores
    scores = scores_of(r, k, log_decay, L)  # (B, NH, NC, L, L)
    current = torch.einsum("bhcid,hd,bhcid->bhci", r, bonus, k)  # (B, NH, NC, L): the bonus term of step i
    y = scores @ v + current[..., None] * v  # (B, NH, NC, L, DH)

    decay_to_end = torch.exp((L - 1 - position)[:, None] * log_decay[:, None, :])  # (NH, L, DH)
    chunk_kv = (k * decay_to_end[:, None]).transpose(-2, -1) @ v  # (B, NH, NC, DH, DH)
    chunk_decay = torch.exp(L * log_decay)[..., None]  # (NH, DH, 1)
    starts = []
    for chunk_kv_c in chunk_kv.unbind(2):
        starts.append(state)
        state = chunk_decay * state + chunk_kv_c  # (B, NH, DH, DH)
    starts = torch.stack(starts, 2)  # (B, NH, NC, DH, DH)
    decay_from_start = torch.exp(position[:, None] * log_decay[:, None, :])  # (NH, L, DH)
    y = y + (r * decay_from_start[:, None]) @ starts  # (B, NH, NC, L, DH)
    return y.reshape(B, NH, S, DH), state


def _chunked_torch(r, k, v, log_decay, bonus, *, initial_state, return_state, chunk_size):
    B, NH, S, DH = r.shape
    state = initial_state if initial_state is not None else r.new_zeros(B, NH, DH, DH)
    L = min(chunk_size, S)
    full = S - S % L
    y, state = _full_chunks(r[:, :, :full], k[:, :, :full], v[:, :, :full], log_decay, bonus, state, L)
    if full < S:  # the ragged rest as one shorter chunk, so the final state decays by exactly S steps
        rest = slice(full, S)
        y_rest, state = _full_chunks(r[:, :, rest], k[:, :, rest], v[:, :, rest], log_decay, bonus, state, S - full)
        y = torch.cat([y, y_rest], dim=2)  # (B, NH, S, DH)
    return (y, state) if return_state else y


def _step_torch(r, k, v, log_decay, bonus, state):
    kv = k[..., :, None] * v[..., None, :]  # (B, NH, DH, DH)
    y = (r[..., None, :] @ (state + bonus[..., None] * kv)).squeeze(-2)  # (B, NH, DH)
    return y, torch.exp(log_decay)[..., None] * state + kv


register("wkv5", "torch", _chunked_torch)
register("wkv5.step", "torch", _step_torch)


def wkv5(
    r: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    log_decay: torch.Tensor,
    bonus: torch.Tensor,
    *,
    initial_state: torch.Tensor | None = None,
    return_state: bool = False,
    chunk_size: int = 16,
    backend: str = "auto",
):
    """WKV outputs y (B, NH, S, DH), plus the final state (B, NH, DH, DH) if ``return_state``.

    Args:
        r, k, v: (B, NH, S, DH) receptance, key and value.
        log_decay: (NH, DH) log of the per-channel decay (<= 0), i.e. ``-exp(time_decay)``.
        bonus: (NH, DH) weight of the current step's key (``time_faaaa``).
        initial_state: (B, NH, DH, DH) state before the first step (key channels x value channels); default 0.
        chunk_size: steps per chunk (any S works; memory of the torch backend grows with S * chunk_size * DH).
    """
    _check(r, k, v, log_decay, bonus, initial_state)
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"wkv5 chunk_size must be a positive int; got {chunk_size!r}")
    implementation = resolve("wkv5", backend, r.device)
    return implementation(
        r, k, v, log_decay, bonus, initial_state=initial_state, return_state=return_state, chunk_size=chunk_size
    )


def wkv5_step(
    r: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    log_decay: torch.Tensor,
    bonus: torch.Tensor,
    state: torch.Tensor,
    *,
    backend: str = "auto",
) -> tuple[torch.Tensor, torch.Tensor]:
    """One step: r, k, v (B, NH, DH), state (B, NH, DH, DH) -> y (B, NH, DH), new state."""
    _check(r[:, :, None], k[:, :, None], v[:, :, None], log_decay, bonus, state)
    return resolve("wkv5.step", backend, r.device)(r, k, v, log_decay, bonus, state)


__all__ = ["wkv5", "wkv5_step"]
