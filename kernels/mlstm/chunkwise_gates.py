"""Gate algebra of the chunkwise mLSTM: stabilisers and gate weights of every chunk, as vectors.

Within a chunk of L steps with cumulative log forget gates b_t (from the chunk start), input gates
i_s and start state (C0, n0, m0), write u_s = i_s - b_s. Step s enters row t (s <= t) with log weight
b_t + u_s and the start state with b_t + m0, so the row stabiliser (the max log weight) is

    m_t = b_t + M_t,    M_t = max(max_{s<=t} u_s, m0)        (a running max: no L x L pass)

and the stabilised weights are D_ts = exp(u_s - M_t) and a_t = exp(m0 - M_t). The last row gives
the next chunk's start: m_next = m_{L-1}, C_next = a_{L-1} C0 + sum_s D_{L-1,s} k_s v_s^T.

Exponentials of L x L matrices use exp2 (several times faster than exp on CPU, and exp is slowest
exactly where the causal mask puts -inf or where results under- or overflow).
"""

import math
from typing import NamedTuple

import torch

LOG2_E = 1.0 / math.log(2.0)  # exp(x) = exp2(x * LOG2_E)


class ChunkGates(NamedTuple):
    """Per-step gate weights of every chunk, all (N, L) over N = B * NH * NC chunks (no gradient)."""

    column_log2: torch.Tensor  # (u_s + log scale) * log2(e): step s's column of the gate matrix
    row_log2: torch.Tensor  # M_t * log2(e): row t's stabiliser offset
    start_weight: torch.Tensor  # a_t = exp(m0 - M_t): the start state's weight in row t
    end_weight: torch.Tensor  # w_s = scale * D_{L-1,s}: step s's weight in the chunk's end state
    row_stabiliser: torch.Tensor  # m_t = b_t + M_t


def chunk_start_stabilisers(u_max, log_decay, m_start) -> torch.Tensor:
    """m entering every chunk and after the last (BH, NC + 1): m_{c+1} = g_c + max(m_c, max u_c).

    u_max, log_decay: (BH, NC), a chunk's max u and total log forget gate g; m_start: (BH,).
    """
    m = [m_start]
    for log_decay_c, u_max_c in zip(log_decay.unbind(-1), u_max.unbind(-1)):
        m.append(log_decay_c + torch.maximum(m[-1], u_max_c))
    return torch.stack(m, -1)


def chunk_gates(i, log_f_cum, m_start, scale: float) -> tuple[ChunkGates, torch.Tensor]:
    """The gate weights of every chunk (fields (N, L), N = BH * NC) and m after the last chunk (BH,).

    i, log_f_cum: (BH, NC, L), log_f_cum summed within chunks; m_start (BH,) the start state's m.
    """
    BH, NC, L = i.shape
    u = i - log_f_cum  # (BH, NC, L)
    m = chunk_start_stabilisers(u.amax(-1), log_f_cum[..., -1], m_start)  # (BH, NC + 1)
    m_in = m[:, :-1, None]  # (BH, NC, 1) m entering each chunk
    M = torch.maximum(u.cummax(-1).values, m_in)  # (BH, NC, L)
    column_log2 = (u + math.log(scale)) * LOG2_E  # (BH, NC, L)
    row_log2 = M * LOG2_E  # (BH, NC, L)
    end_weight = torch.exp2(column_log2 - row_log2[..., -1:])  # (BH, NC, L)
    gates = ChunkGates(column_log2, row_log2, torch.exp(m_in - M), end_weight, log_f_cum + M)
    return ChunkGates(*(x.reshape(BH * NC, L) for x in gates)), m[:, -1]


def gate_matrix(column_log2, row_log2, out: torch.Tensor) -> torch.Tensor:
    """scale * D into ``out`` (n, L, L): D_ts = exp(u_s - M_t) for s <= t, else 0.

    Above the diagonal u_s - M_t may be large: exp2 gives inf there, which tril_ overwrites.
    """
    torch.sub(column_log2[:, None, :], row_log2[:, :, None], out=out)
    return out.exp2_().tril_()


def normaliser_slope(normaliser, row_stabiliser) -> torch.Tensor:
    """d max(|nrm|, exp(-m)) / d nrm, with torch.maximum's convention (half each on ties)."""
    floor = torch.exp(-row_stabiliser)
    size = normaliser.abs()
    share = torch.where(size > floor, 1.0, torch.where(size == floor, 0.5, 0.0))
    return share * normaliser.sign()
