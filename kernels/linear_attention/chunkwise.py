"""Chunkwise-parallel gated linear attention: the torch core that every op of this package maps onto.

The recurrence, per head, with a state S (DK, DV) and log decays a_t <= 0 (per key dim or per head):

    S_t = diag(exp(a_t)) S_{t-1} + k_t v_t^T
    o_t = q_t^T S_t          (inclusive: the token sees its own key, as in GLA, RetNet, HGRN)
    o_t = q_t^T S_{t-1}      (exclusive: RWKV-6, whose own token enters through its bonus u instead)

Within a chunk of L steps the weight of key s in the output at t is exp(a_{s+1} + ... + a_t) (up to
a_{t-1} if exclusive). Every exponent is a sum of log decays over a segment, built as such (a masked
cumulative sum, never as a difference of two long prefix sums), so it is <= 0, cannot overflow and
keeps its relative precision whatever the decays: no factorisation into exp(b_t) * exp(-b_s).
Per-key-dim decays need an (L, L, DK) tensor per chunk, scalar decays an (L, L) matrix. States at
chunk boundaries come from a loop over chunks on (DK, DV) states; each chunk's own contribution is one
batched matmul. A ragged last chunk is padded with steps of decay 1 and zero keys, which leave the
state unchanged.
"""

import torch
from torch.nn.functional import pad


def _pad_time(x: torch.Tensor, steps: int) -> torch.Tensor:
    """Append ``steps`` zero time steps; time is dim 2 of (B, NH, S, X)."""
    return x if steps == 0 else pad(x, (0, 0, 0, steps))


def _shift(x: torch.Tensor, dim: int, forward: bool) -> torch.Tensor:
    """Move x one step along ``dim`` (later if ``forward``), filling the freed place with zeros."""
    x = x.movedim(dim, -1)
    shifted = pad(x[..., :-1], (1, 0)) if forward else pad(x[..., 1:], (0, 1))
    return shifted.movedim(-1, dim)


def _segment_log_decays(log_decay: torch.Tensor, exclusive: bool) -> torch.Tensor:
    """[t, s] = a_{s+1} + ... + a_t (to a_{t-1} if exclusive) where key s reaches query t, else -inf.

    log_decay: (..., L, X) -> (..., L, L, X).
    """
    L = log_decay.shape[-2]
    after_key = torch.ones(L, L, dtype=torch.bool, device=log_decay.device).tril(-1)[..., None]  # r > s
    steps = log_decay[..., :, None, :].expand(*log_decay.shape[:-1], L, log_decay.shape[-1])  # [r, s] = a_r
    sums = steps.masked_fill(~after_key, 0.0).cumsum(-3)  # [t, s] = sum over s < r <= t
    if exclusive:
        sums = _shift(sums, -3, forward=True)  # [t, s] = sum over s < r < t
    reaches = torch.ones(L, L, dtype=torch.bool, device=log_decay.device).tril(-1 if exclusive else 0)
    return sums.masked_fill(~reaches[..., None], float("-inf"))


def _intra_chunk_scores(q, k, log_decay, exclusive) -> torch.Tensor:
    """Decayed scores within chunks (B, NH, NC, L, L).

    q, k: (B, NH, NC, L, DK); log_decay: (B, NH, NC, L, DK), or (..., L, 1) for one decay per head.
    """
    decay = torch.exp(_segment_log_decays(log_decay, exclusive))  # (B, NH, NC, L, L, DK or 1)
    if log_decay.shape[-1] == 1:
        return (q @ k.transpose(-1, -2)) * decay[..., 0]
    return torch.einsum("...tsd,...td,...sd->...ts", decay, q, k)


def _chunk_start_states(k, v, decay_after, chunk_decay, start) -> tuple[torch.Tensor, torch.Tensor]:
    """States before every chunk (B, NH, NC, DK, DV) and after the last one (B, NH, DK, DV).

    k: (B, NH, NC, L, DK); v: (B, NH, NC, L, DV); decay_after: (..., L, DK or 1), a key's decay from its
    step to its chunk's end; chunk_decay: (B, NH, NC, DK or 1), the whole chunk's decay.
    """
    state_in = (k * decay_after).transpose(-1, -2) @ v  # (B, NH, NC, DK, DV)
    states = [start]
    # unbind, not indexing in the loop: the backward of one index op allocates the whole tensor
    for state_in_c, decay_c in zip(state_in.unbind(2), chunk_decay[..., None].unbind(2)):
        states.append(torch.addcmul(state_in_c, decay_c, states[-1]))  # (B, NH, DK, DV)
    return torch.stack(states[:-1], dim=2), states[-1]


def chunkwise_gated_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    log_decay: torch.Tensor,
    *,
    initial_state: torch.Tensor | None,
    exclusive: bool,
    chunk_size: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Outputs (B, NH, S, DV) and final state (B, NH, DK, DV) of the recurrence above.

    q (already scaled), k: (B, NH, S, DK); v: (B, NH, S, DV); log_decay: (B, NH, S, DK) per key dim or
    (B, NH, S, 1) per head, all <= 0; initial_state: (B, NH, DK, DV) or None for zeros.
    """
    B, NH, S, DK = q.shape
    DV = v.shape[-1]
    L = min(chunk_size, S)
    NC = -(-S // L)
    extra = NC * L - S
    start = initial_state if initial_state is not None else q.new_zeros(B, NH, DK, DV)
    q, k, v, log_decay = (_pad_time(x, extra).reshape(B, NH, NC, L, -1) for x in (q, k, v, log_decay))
    from_start = log_decay.cumsum(3)  # (B, NH, NC, L, DK or 1) log decay from the chunk's start to t
    if exclusive:
        from_start = _shift(from_start, 3, forward=True)  # to t - 1
    to_end = _shift(log_decay.flip(3).cumsum(3).flip(3), 3, forward=False)  # after s to the chunk's end
    chunk_total = log_decay.sum(3)  # (B, NH, NC, DK or 1)
    scores = _intra_chunk_scores(q, k, log_decay, exclusive)  # (B, NH, NC, L, L)
    starts, final_state = _chunk_start_states(k, v, torch.exp(to_end), torch.exp(chunk_total), start)
    o = scores @ v + (q * torch.exp(from_start)) @ starts  # (B, NH, NC, L, DV)
    return o.reshape(B, NH, NC * L, DV)[:, :, :S], final_state
