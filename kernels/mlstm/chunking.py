"""Sequences in chunks: splitting into chunks of L steps, blocks of chunks, scans across chunks and
the joined layout of a chunk's state.

A ragged last chunk is padded with steps that leave the state unchanged (forget gate 1, input
gate 0, q = k = v = 0), whose outputs are dropped.
"""

import torch
from torch.nn.functional import pad

from kernels.mlstm.chunkwise_gates import gate_dtype


def pad_time(x: torch.Tensor, steps: int, value: float = 0.0) -> torch.Tensor:
    """Append ``steps`` time steps filled with ``value``; time is dim 2 of (B, NH, S[, DH])."""
    if steps == 0:
        return x
    widths = (0, 0, 0, steps) if x.dim() == 4 else (0, steps)
    return pad(x, widths, value=value)


def split_into_chunks(q, k, v, i, log_f, chunk_size: int):
    """q, k, v (B, NH, NC, L, DH); i and the log forget gates summed within chunks (B, NH, NC, L).

    L = min(chunk_size, S). Inputs: q, k, v (B, NH, S, DH); i, log_f (B, NH, S).
    """
    B, NH, S, DH = q.shape
    L = min(chunk_size, S)
    NC = -(-S // L)
    extra = NC * L - S
    q, k, v = (pad_time(x, extra).reshape(B, NH, NC, L, DH) for x in (q, k, v))
    log_f_cum = pad_time(log_f, extra).reshape(B, NH, NC, L).cumsum(-1)  # padded: f = 1
    i = pad_time(i, extra, float("-inf")).reshape(B, NH, NC, L)  # padded: input gate exp(-inf) = 0
    return q, k, v, i, log_f_cum


def merge_chunks(h: torch.Tensor, S: int) -> torch.Tensor:
    """(B, NH, NC, L, DH) -> (B, NH, S, DH), dropping the padded steps."""
    B, NH, NC, L, DH = h.shape
    h = h.reshape(B, NH, NC * L, DH)  # (B, NH, NC * L, DH)
    return h if NC * L == S else h[:, :, :S]


def blocks(count: int, size: int):
    """Consecutive slices of at most ``size`` items covering range(count)."""
    return [slice(start, min(start + size, count)) for start in range(0, count, size)]


def decay_products(decay: torch.Tensor) -> torch.Tensor:
    """W (BH, NC + 1, NC + 1) with W[c, j] = prod_{j <= l < c} decay_l (1 on the diagonal, 0 above it): the weight
    of what enters at chunk boundary j in the state at boundary c.

    decay (BH, NC) in [0, 1]. Summed as logs in the gate dtype (a zero decay is a log of -inf, which only ever
    meets finite logs), so W equals the product of the decays to that precision.
    """
    BH, NC = decay.shape
    log_decay = decay.to(gate_dtype(decay.device)).log()  # (BH, NC)
    rows = torch.cat([log_decay.new_zeros(BH, 1), log_decay], 1)  # (BH, NC + 1): row c adds log decay_{c-1}
    summed = rows[:, :, None].expand(BH, NC + 1, NC + 1).tril(-1).cumsum(1)  # (BH, NC + 1, NC + 1)
    return summed.exp().tril().to(decay.dtype)


def scan_states(slots: torch.Tensor, decay: torch.Tensor, first: torch.Tensor) -> torch.Tensor:
    """x_{c+1} = decay_c x_c + own_c across each head's chunks: the states entering the chunks, into ``slots``.

    slots (N + 1, ...) over N = BH * NC chunks (head-major) holds each chunk's own contribution one
    slot late (chunk j's in slot j + 1); decay (BH, NC); first (BH, ...) the state entering each
    head's first chunk. Afterwards slots[:N] hold the states entering the chunks. Returns the states
    after each head's last chunk (BH, ...).

    The scan runs as one matmul with the decay products (``decay_products``), not as NC small steps: on a busy
    CPU every step is a parallel region that waits for its threads, and the steps cost far more than their sums.
    """
    BH, NC = decay.shape
    N, E = BH * NC, slots[0].numel()
    weights = decay_products(decay)  # (BH, NC + 1, NC + 1)
    terms = torch.cat([first.reshape(BH, 1, E), slots[1:].view(BH, NC, E)], 1)  # (BH, NC + 1, E) first, own_c
    torch.bmm(weights[:, :NC], terms, out=slots[:N].view(BH, NC, E))
    return torch.bmm(weights[:, NC:], terms).view(BH, *slots.shape[1:])


def scan_state_gradients(slots: torch.Tensor, decay: torch.Tensor, last: torch.Tensor) -> torch.Tensor:
    """The backward of ``scan_states``: gradients of the states leaving the chunks, into ``slots``.

    slots (N + 1, ...) holds each chunk's own gradient contribution to the state entering it, in
    slot j for chunk j (slot N is free); decay (BH, NC); last (BH, ...) the gradient of the state
    after each head's last chunk. Afterwards slots[1:] hold the gradients of the states leaving
    the chunks. Returns the gradient of the state entering each head's first chunk (BH, ...).
    One matmul with the transposed decay products, as ``scan_states``.
    """
    BH, NC = decay.shape
    N, E = BH * NC, slots[0].numel()
    weights = decay_products(decay).transpose(1, 2)  # (BH, NC + 1, NC + 1): [c, j] = prod_{c <= l < j} decay_l
    terms = torch.cat([slots[:N].view(BH, NC, E), last.reshape(BH, 1, E)], 1)  # (BH, NC + 1, E) own_c, last
    torch.bmm(weights[:, 1:], terms, out=slots[1:].view(BH, NC, E))
    return torch.bmm(weights[:, :1], terms).view(BH, *slots.shape[1:])


def join_state(C: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    """C (..., DH, DH) and n (..., DH) as one (..., DH + 1, DH): rows C^T, then n.

    C^T rows make ``x[..., :-1, :]`` a plain matrix for matmuls, and one scan step moves C and n.
    """
    return torch.cat([C.transpose(-1, -2), n.unsqueeze(-2)], -2)


def C_part(state: torch.Tensor) -> torch.Tensor:
    """C (..., DH, DH), a view, of a joined state (..., DH + 1, DH)."""
    return state[..., :-1, :].transpose(-1, -2)


def n_part(state: torch.Tensor) -> torch.Tensor:
    """n (..., DH), a view, of a joined state (..., DH + 1, DH)."""
    return state[..., -1, :]
