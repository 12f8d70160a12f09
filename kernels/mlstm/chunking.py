"""Sequences in chunks: splitting into chunks of L steps, blocks of chunks, scans across chunks and
the joined layout of a chunk's state.

A ragged last chunk is padded with steps that leave the state unchanged (forget gate 1, input
gate 0, q = k = v = 0), whose outputs are dropped.
"""

import torch
from torch.nn.functional import pad


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


def scan_states(slots: torch.Tensor, decay: torch.Tensor, first: torch.Tensor) -> torch.Tensor:
    """x_{c+1} = decay_c x_c + own_c across each head's chunks, in place: the states entering the chunks.

    slots (N + 1, ...) over N = BH * NC chunks (head-major) holds each chunk's own contribution one
    slot late (chunk j's in slot j + 1); decay (BH, NC); first (BH, ...) the state entering each
    head's first chunk. Afterwards slots[:N] hold the states entering the chunks. Returns the states
    after each head's last chunk (BH, ...).
    """
    BH, NC = decay.shape
    N = BH * NC
    last_own = slots[NC::NC].clone()  # (BH, ...) own contributions of the last chunks
    slots[0:N:NC] = first
    x = slots[:N].view(BH, NC, *slots.shape[1:])  # (BH, NC, ...)
    decay = decay.view(BH, NC, *(1,) * (slots.dim() - 1))  # (BH, NC, 1, ...)
    for c in range(1, NC):
        x[:, c].addcmul_(x[:, c - 1], decay[:, c - 1])
    return last_own.addcmul_(x[:, -1], decay[:, -1])


def scan_state_gradients(slots: torch.Tensor, decay: torch.Tensor, last: torch.Tensor) -> torch.Tensor:
    """The backward of ``scan_states``, in place: gradients of the states leaving the chunks.

    slots (N + 1, ...) holds each chunk's own gradient contribution to the state entering it, in
    slot j for chunk j (slot N is free); decay (BH, NC); last (BH, ...) the gradient of the state
    after each head's last chunk. Afterwards slots[1:] hold the gradients of the states leaving
    the chunks. Returns the gradient of the state entering each head's first chunk (BH, ...).
    """
    BH, NC = decay.shape
    N = BH * NC
    first_own = slots[0:N:NC].clone()  # (BH, ...) own contributions of the first chunks
    slots[NC::NC] = last
    x = slots[1:].view(BH, NC, *slots.shape[1:])  # (BH, NC, ...): x[:, c] leaves chunk c
    decay = decay.view(BH, NC, *(1,) * (slots.dim() - 1))  # (BH, NC, 1, ...)
    for c in range(NC - 2, -1, -1):
        x[:, c].addcmul_(x[:, c + 1], decay[:, c + 1])
    return first_own.addcmul_(x[:, 0], decay[:, 0])


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
