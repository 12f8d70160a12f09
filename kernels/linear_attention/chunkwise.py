"""Chunkwise-parallel gated linear attention: the torch core that every op of this package maps onto.

The recurrence, per head, with a state S (DK, DV) and log decays a_t <= 0 (per key dim or per head):

    S_t = diag(exp(a_t)) S_{t-1} + k_t v_t^T
    o_t = q_t^T S_t          (inclusive: the token sees its own key, as in GLA, RetNet, HGRN)
    o_t = q_t^T S_{t-1}      (exclusive: RWKV-6, whose own token enters through its bonus u instead)

Within a chunk of L steps the weight of key s in the output at t is exp(a_{s+1} + ... + a_t) (up to
a_{t-1} if exclusive). With b_t the log decay summed from the chunk's start to t and m half the chunk's
total, that is exp(b_t - m) * exp(m - b_s). While every chunk's total stays within log(the dtype's largest
value) / 2 (44 in float32 and bfloat16, 354 in float64), a chunk's scores are one (L, DK) x (DK, L) matmul of
queries and keys scaled by those factors, which stay within exp(+-22) in float32; the exponents' absolute
error is about eps * 44, a relative error of the weights of at most about 5e-6 in float32.

Trained models go far beyond that bound (RWKV-6's data-dependent decays after 500 steps of a formal task:
chunk totals of 4,000 and more). Then the scores are built by halving: at each level h = 2, 4, ..., L the
chunk splits into blocks of h steps, and the queries of a block's second half meet the keys of its first
half through the first half's last step r: the weight is exp(a_{r+1} + ... + a_t) * exp(a_{s+1} + ... + a_r),
so the block is one (h/2, DK) x (DK, h/2) matmul of rescaled queries and keys. Both exponents are sums of log
decays over a segment, built as such (cumulative sums from r, never a difference of two prefix sums), so both
are <= 0 and keep their relative precision whatever the decays; factors below exp(-43.7) in float32 are set
to zero (``_decay``: subnormal arithmetic is slow). The levels cover every pair s < t; the diagonal is
q_t . k_t (inclusive) or nothing. L is a power of two (chunk_size rounded down).

States at chunk boundaries come from a loop over chunks on (DK, DV) states; each chunk's own contribution is
one batched matmul. A ragged last chunk is padded with steps of decay 1 and zero keys, which leave the state
unchanged.

The backward is written by hand (one autograd Function). The gradients of q, k, v and the initial state
are the same chunkwise computation run backwards: query-side outputs read states, key-side ones read the
gradient flowing into the states after their chunk. The log decays' gradient needs no pass over the scores:
with b_t now the log decay summed from the sequence's start, the output and final state depend on b only
through q_t exp(b_t) (exp(b_{t-1}) if exclusive), k_s exp(-b_s) and the final state's exp(b_T), so

    dL/db_u = q_u . dq_u (q_{u+1} . dq_{u+1} if exclusive) - k_u . dk_u (+ sum(dF * F) at u = T)

elementwise per key dim, and dL/da_r is the sum of dL/db_u over u >= r (the identity fla's chunked
kernels use). Nothing of b is ever exponentiated; only the gradients are summed.
"""

import functools
import math

import torch
from torch.autograd.function import once_differentiable
from torch.nn.functional import pad


def _pad_time(x: torch.Tensor, steps: int) -> torch.Tensor:
    """Append ``steps`` zero time steps; time is dim 2 of (B, NH, S, X)."""
    return x if steps == 0 else pad(x, (0, 0, 0, steps))


def _shift(x: torch.Tensor, dim: int, forward: bool) -> torch.Tensor:
    """Move x one step along ``dim`` (later if ``forward``), filling the freed place with zeros."""
    x = x.movedim(dim, -1)
    shifted = pad(x[..., :-1], (1, 0)) if forward else pad(x[..., 1:], (0, 1))
    return shifted.movedim(-1, dim)


def _sums_through(log_decay: torch.Tensor, dim: int, exclusive: bool) -> torch.Tensor:
    """Log decays summed along ``dim`` from its start to each step (to the step before if ``exclusive``)."""
    sums = log_decay.cumsum(dim)
    return _shift(sums, dim, forward=True) if exclusive else sums


def _sums_after(log_decay: torch.Tensor, dim: int) -> torch.Tensor:
    """Log decays summed along ``dim`` from after each step to its end."""
    return _shift(log_decay.flip(dim).cumsum(dim).flip(dim), dim, forward=False)


def _halves(x: torch.Tensor, h: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Views of the first and second halves of x's blocks of h steps (time is dim -2): each (..., L / h, h / 2, X)."""
    blocks = x.unflatten(-2, (x.shape[-2] // h, 2, h // 2))
    return blocks[..., 0, :, :], blocks[..., 1, :, :]


def _decay(log_decay: torch.Tensor) -> torch.Tensor:
    """exp of log decays <= 0, zero below the smaller of half the log of the dtype's smallest normal number and twice
    the log of its eps (float32: exp(-43.7) = 1.1e-19): a product of two such factors stays a normal number, as
    arithmetic on subnormals is many times slower on CPUs, and a weight below eps^2 is lost in any sum beside 1."""
    finfo = torch.finfo(log_decay.dtype)
    negligible = min(math.log(finfo.tiny) / 2, 2 * math.log(finfo.eps))
    return torch.exp(log_decay.masked_fill(log_decay < negligible, -math.inf))


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


def _forward_in_chunks(q, k, v, log_decay, start, exclusive):
    """Outputs (B, NH, NC, L, DV), final state (B, NH, DK, DV), what the backward reads and whether the scores were
    factorised over whole chunks.

    q, k: (B, NH, NC, L, DK); v: (B, NH, NC, L, DV); log_decay: (B, NH, NC, L, DK or 1); start (B, NH, DK, DV).
    """
    from_start = _sums_through(log_decay, 3, exclusive)  # (B, NH, NC, L, DK or 1) from the chunk's start to t
    to_end = _sums_after(log_decay, 3)  # after s to the chunk's end
    chunk_total = log_decay.sum(3)  # (B, NH, NC, DK or 1)
    factorised = factorisable(chunk_total, q.dtype)
    intra_scores = _factorised_scores if factorised else _halving_scores
    scores = intra_scores(q, k, log_decay, exclusive)  # (B, NH, NC, L, L)
    decay_from_start, decay_to_end, chunk_decay = (_decay(x) for x in (from_start, to_end, chunk_total))
    starts, final_state = _chunk_start_states(k, v, decay_to_end, chunk_decay, start)
    o = scores @ v + (q * decay_from_start) @ starts  # (B, NH, NC, L, DV)
    return o, final_state, (log_decay, scores, starts, decay_from_start, decay_to_end, chunk_decay), factorised


def factorisable(chunk_total: torch.Tensor, dtype: torch.dtype) -> bool:
    """Whether every chunk's total log decay (B, NH, NC, X) allows one factorisation of the whole chunk. Never
    under torch.compile: the halving needs no decision on the data, so the graph does not break."""
    if torch.compiler.is_compiling():
        return False
    return bool((-chunk_total <= math.log(torch.finfo(dtype).max) / 2).all())


def _reaches(L: int, exclusive: bool, device) -> torch.Tensor:
    """(L, L) bool: [t, s] where key s reaches query t within a chunk."""
    return torch.ones(L, L, dtype=torch.bool, device=device).tril(-1 if exclusive else 0)


def _whole_chunk_factors(log_decay, exclusive) -> tuple[torch.Tensor, torch.Tensor]:
    """Query factors exp(b_t - m) (b_{t-1} if exclusive) and key factors exp(m - b_s), (..., L, X): b summed from
    the chunk's start, m half the chunk's total."""
    half = log_decay.sum(-2, keepdim=True) / 2
    query_exponent, key_exponent = _sums_through(log_decay, -2, exclusive), _sums_through(log_decay, -2, False)
    return torch.exp(query_exponent - half), torch.exp(half - key_exponent)


def _factorised_scores(q, k, log_decay, exclusive) -> torch.Tensor:
    """Decayed scores within chunks (B, NH, NC, L, L) as one matmul of rescaled queries and keys per chunk."""
    query_factor, key_factor = _whole_chunk_factors(log_decay, exclusive)
    scores = (q * query_factor) @ (k * key_factor).transpose(-1, -2)
    return scores.masked_fill(~_reaches(q.shape[-2], exclusive, q.device), 0)


def _factorised_input_gradients(q, k, log_decay, exclusive, grad_scores) -> tuple[torch.Tensor, torch.Tensor]:
    """Gradients of q and k (B, NH, NC, L, DK) through the factorised scores, given theirs (..., L, L)."""
    query_factor, key_factor = _whole_chunk_factors(log_decay, exclusive)
    masked = grad_scores.masked_fill(~_reaches(q.shape[-2], exclusive, q.device), 0)  # (B, NH, NC, L, L)
    grad_q = query_factor * (masked @ (k * key_factor))
    return grad_q, key_factor * (masked.transpose(-1, -2) @ (q * query_factor))


def _halving_levels(log_decay: torch.Tensor, exclusive: bool):
    """Per level, from blocks of 2 steps to the chunk: (h, query factors, key factors), each (..., L / h, h / 2, X).

    log_decay: (..., L, X), L a power of two. Query t of a block's second half: exp(a_{r+1} + ... + a_t) (to
    a_{t-1} if exclusive); key s of its first half: exp(a_{s+1} + ... + a_r); r: the first half's last step.
    """
    h = 2
    while h <= log_decay.shape[-2]:
        first, second = _halves(log_decay, h)  # (..., L / h, h / 2, X)
        yield h, _decay(_sums_through(second, -2, exclusive)), _decay(_sums_after(first, -2))
        h *= 2


def _block_pairs(square: torch.Tensor, h: int) -> torch.Tensor:
    """A view of the (..., L, L) ``square``'s blocks where a block of h steps' second half meets its first: (...,
    h / 2, h / 2, L / h), the block index last."""
    L = square.shape[-1]
    blocks = square.view(*square.shape[:-2], L // h, 2, h // 2, L // h, 2, h // 2)
    return torch.diagonal(blocks, dim1=-6, dim2=-3)[..., 1, :, 0, :, :]


def _halving_scores(q, k, log_decay, exclusive) -> torch.Tensor:
    """Decayed scores within chunks (B, NH, NC, L, L), level by level of the halving.

    q, k: (B, NH, NC, L, DK); log_decay: (B, NH, NC, L, DK), or (..., L, 1) for one decay per head.
    """
    scores = q.new_zeros(*q.shape[:-1], q.shape[-2])
    for h, query_factor, key_factor in _halving_levels(log_decay, exclusive):
        queries = _halves(q, h)[1] * query_factor  # (..., L / h, h / 2, DK)
        keys = _halves(k, h)[0] * key_factor
        _block_pairs(scores, h).copy_((queries @ keys.transpose(-1, -2)).movedim(-3, -1))
    if not exclusive:
        torch.diagonal(scores, dim1=-2, dim2=-1).copy_((q * k).sum(-1))  # a token's own key, weight 1
    return scores


def _halving_input_gradients(q, k, log_decay, exclusive, grad_scores) -> tuple[torch.Tensor, torch.Tensor]:
    """Gradients of q and k (B, NH, NC, L, DK) through the intra-chunk scores, given theirs (..., L, L)."""
    grad_q, grad_k = torch.zeros_like(q), torch.zeros_like(k)
    for h, query_factor, key_factor in _halving_levels(log_decay, exclusive):
        blocks = _block_pairs(grad_scores, h).movedim(-1, -3)  # (..., L / h, h / 2 queries, h / 2 keys)
        queries = _halves(q, h)[1] * query_factor  # (..., L / h, h / 2, DK)
        keys = _halves(k, h)[0] * key_factor
        _halves(grad_q, h)[1].add_(query_factor * (blocks @ keys))  # in place, through the view
        _halves(grad_k, h)[0].add_(key_factor * (blocks.transpose(-1, -2) @ queries))
    if not exclusive:
        own = torch.diagonal(grad_scores, dim1=-2, dim2=-1)[..., None]  # (B, NH, NC, L, 1)
        grad_q, grad_k = grad_q + own * k, grad_k + own * q
    return grad_q, grad_k


def _state_gradients(q_decayed, grad_o, chunk_decay, grad_final_state) -> tuple[torch.Tensor, torch.Tensor]:
    """Gradients of the states after every chunk (B, NH, NC, DK, DV) and of the initial state (B, NH, DK, DV).

    q_decayed: (B, NH, NC, L, DK), the queries times their decay since the chunk's start; grad_o: (..., L, DV);
    chunk_decay: (B, NH, NC, DK or 1); grad_final_state: (B, NH, DK, DV).
    """
    read_by_chunk = q_decayed.transpose(-1, -2) @ grad_o  # (B, NH, NC, DK, DV): through the chunk's outputs
    after = [grad_final_state]
    for read_c, decay_c in zip(reversed(read_by_chunk.unbind(2)), reversed(chunk_decay[..., None].unbind(2))):
        after.append(torch.addcmul(read_c, decay_c, after[-1]))  # into the state before this chunk
    return torch.stack(after[-2::-1], dim=2), after[-1]


class _ChunkwiseGatedAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, log_decay, initial_state, exclusive, chunk_len):
        B, NH, S, DK = q.shape
        DV = v.shape[-1]
        NC = -(-S // chunk_len)
        start = initial_state if initial_state is not None else q.new_zeros(B, NH, DK, DV)
        # contiguous: batched matmuls over (B, NH, NC) of strided views run matrix by matrix, copying each
        chunked = (_pad_time(x, NC * chunk_len - S).reshape(B, NH, NC, chunk_len, -1) for x in (q, k, v, log_decay))
        q, k, v, log_decay = (x.contiguous() for x in chunked)
        o, final_state, saved, ctx.factorised = _forward_in_chunks(q, k, v, log_decay, start, exclusive)
        ctx.save_for_backward(q, k, v, final_state, *saved)
        ctx.exclusive, ctx.length, ctx.has_initial_state = exclusive, S, initial_state is not None
        return o.reshape(B, NH, NC * chunk_len, DV)[:, :, :S], final_state

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_o, grad_final_state):
        q, k, v, final_state, log_decay, scores, starts, decay_from_start, decay_to_end, chunk_decay = ctx.saved_tensors
        B, NH, NC, L, DK = q.shape
        if grad_final_state is None:
            grad_final_state = torch.zeros_like(final_state)
        grad_o = _pad_time(grad_o, NC * L - ctx.length).reshape(B, NH, NC, L, -1).contiguous()  # (B, NH, NC, L, DV)
        grad_after, grad_start = _state_gradients(q * decay_from_start, grad_o, chunk_decay, grad_final_state)
        # o = scores @ v + (q * decay_from_start) @ starts;  starts feed on k * decay_to_end and v
        grad_scores = grad_o @ v.transpose(-1, -2)  # (B, NH, NC, L, L)
        intra_gradients = _factorised_input_gradients if ctx.factorised else _halving_input_gradients
        grad_q, grad_k = intra_gradients(q, k, log_decay, ctx.exclusive, grad_scores)
        grad_q = grad_q + decay_from_start * (grad_o @ starts.transpose(-1, -2))  # (B, NH, NC, L, DK)
        grad_k = grad_k + decay_to_end * (v @ grad_after.transpose(-1, -2))
        grad_v = scores.transpose(-1, -2) @ grad_o + (k * decay_to_end) @ grad_after  # (B, NH, NC, L, DV)
        grad_q, grad_k, grad_v = (x.reshape(B, NH, NC * L, -1) for x in (grad_q, grad_k, grad_v))
        grad_log_decay = _log_decay_gradient(
            q.reshape(B, NH, NC * L, DK),
            grad_q,
            k.reshape(B, NH, NC * L, DK),
            grad_k,
            final_state,
            grad_final_state,
            exclusive=ctx.exclusive,
            per_key_dim=chunk_decay.shape[-1] > 1,
        )
        S = ctx.length
        grads = (x[:, :, :S] for x in (grad_q, grad_k, grad_v, grad_log_decay))
        return *grads, (grad_start if ctx.has_initial_state else None), None, None


def _log_decay_gradient(q, grad_q, k, grad_k, final_state, grad_final_state, *, exclusive, per_key_dim):
    """dL/da (B, NH, S, DK or 1) from the gradients of q and k (B, NH, S, DK): the identity of the module's doc."""
    through_q = q * grad_q
    if exclusive:
        through_q = _shift(through_q, 2, forward=False)  # query t reads b_{t-1}
    grad_b = through_q - k * grad_k  # (B, NH, S, DK)
    grad_b[:, :, -1] += (grad_final_state * final_state).sum(-1)  # the final state reads b_T
    if not per_key_dim:
        grad_b = grad_b.sum(-1, keepdim=True)
    return grad_b.flip(2).cumsum(2).flip(2)  # sum over u >= r


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
    chunk_len = 2 ** (min(chunk_size, q.shape[2]).bit_length() - 1)  # a power of two, for the halving
    # one dtype, out of autocast: under mixed precision the inputs arrive in several (bf16 projections, float32
    # decays), and the Function's hand-written backward would multiply them as they come
    tensors = [x for x in (q, k, v, log_decay, initial_state) if x is not None]
    dtype = functools.reduce(torch.promote_types, (x.dtype for x in tensors))
    q, k, v, log_decay = (x.to(dtype) for x in (q, k, v, log_decay))
    initial_state = None if initial_state is None else initial_state.to(dtype)
    with torch.autocast(q.device.type, enabled=False):
        return _ChunkwiseGatedAttention.apply(q, k, v, log_decay, initial_state, exclusive, chunk_len)
