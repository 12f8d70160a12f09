"""Gate algebra of the chunkwise mLSTM: stabilisers and gate weights of every chunk, as vectors.

Within a chunk of L steps with cumulative log forget gates b_t (from the chunk start), input gates
i_s and start state (C0, n0, m0), write u_s = i_s - b_s. Step s enters row t (s <= t) with log weight
b_t + u_s and the start state with b_t + m0, so the row stabiliser (the max log weight) is

    m_t = b_t + M_t,    M_t = max(max_{s<=t} u_s, m0)        (a running max: no L x L pass)

and the stabilised weights are D_ts = exp(u_s - M_t) and a_t = exp(m0 - M_t). The last row gives
the next chunk's start: m_next = m_{L-1}, C_next = a_{L-1} C0 + sum_s D_{L-1,s} k_s v_s^T.

Precision: b_s, u_s and M_t grow with the chunk's summed log forget gates (to L |log f|: 64000 at
L = 64 with gates of -1000), while the exponents that matter, u_s - M_t near 0, need absolute
precision: a float32 rounding of such a sum costs up to 1e-3 relative in D. So the sums and the gate
algebra run in ``gate_dtype`` (float64, on (N, L) vectors only), and the L x L pass, in the working
dtype, takes the difference of two float32 numbers within a factor of 2 of each other wherever D
matters, which is exact:

- a row may use any stabiliser near its max if all its terms (D, a_t and the floor exp(-m_t)) use
  the same one; rows use M_t rounded to the working dtype (``row``);
- u_s is split into its rounding to the working dtype (``column``) and the remainder, which the
  pass adds after the difference;
- log2(e) (for exp2) and the scale of q.k never touch u and M at their large magnitude: log2(e)
  scales the difference, and the scale is a factor of the end weights and the alpha of the score
  matmuls.

The end state refers to m after the chunk, so its weights use M_{L-1} unrounded.

Exponentials of L x L matrices use exp2 (several times faster than exp on CPU, and exp is slowest
exactly where the causal mask puts -inf or where results under- or overflow).
"""

import math
from typing import NamedTuple

import torch

LOG2_E = 1.0 / math.log(2.0)  # exp(x) = exp2(x * LOG2_E)


def gate_dtype(device: torch.device) -> torch.dtype:
    """dtype of the gate algebra: float64, or float32 on MPS (which has no float64)."""
    return torch.float32 if device.type == "mps" else torch.float64


class ChunkGates(NamedTuple):
    """Gate weights of every chunk over N = B * NH * NC chunks, (N, L) but ``decay`` (N,); no gradient."""

    column: torch.Tensor  # u_s rounded to the working dtype: step s's column of the log gate matrix
    column_remainder_log2: torch.Tensor  # (u_s - column_s) * log2(e): what that rounding left out
    row: torch.Tensor  # M_t rounded to the working dtype: row t's stabiliser offset
    start_weight: torch.Tensor  # a_t = exp(m0 - row_t): the start state's weight in row t
    row_stabiliser: torch.Tensor  # m_t = b_t + row_t
    end_weight: torch.Tensor  # w_s = scale * exp(u_s - M_{L-1}): step s's weight in the chunk's end state
    decay: torch.Tensor  # exp(m0 - M_{L-1}): the start state's weight in the chunk's end state


def chunk_start_stabilisers(u_max, log_decay, m_start) -> torch.Tensor:
    """m entering every chunk and after the last (BH, NC + 1): m_{c+1} = g_c + max(m_c, max u_c).

    u_max, log_decay: (BH, NC), a chunk's max u and total log forget gate g; m_start: (BH,).
    """
    m = [m_start]
    for log_decay_c, u_max_c in zip(log_decay.unbind(-1), u_max.unbind(-1)):
        m.append(log_decay_c + torch.maximum(m[-1], u_max_c))
    return torch.stack(m, -1)


def chunk_gates(i, log_f_cum, m_start, scale: float) -> tuple[ChunkGates, torch.Tensor]:
    """The gate weights of every chunk (fields over N = BH * NC chunks) and m after the last chunk (BH,).

    i (BH, NC, L) and m_start (BH,), the start state's m, in the working dtype; log_f_cum (BH, NC, L)
    summed within chunks in the gate dtype, in which the algebra runs. All results in the working dtype.
    """
    BH, NC, L = i.shape
    working, precise = i.dtype, log_f_cum.dtype
    u = i - log_f_cum  # (BH, NC, L); float32 with float64 computes in float64, here and below
    m = chunk_start_stabilisers(u.amax(-1), log_f_cum[..., -1], m_start.to(precise))  # (BH, NC + 1)
    m_in = m[:, :-1, None]  # (BH, NC, 1) m entering each chunk
    M = torch.maximum(u.cummax(-1).values, m_in)  # (BH, NC, L)
    column, row = u.to(working), M.to(working)  # (BH, NC, L) each
    gates = ChunkGates(
        column=column,
        column_remainder_log2=((u - column) * LOG2_E).nan_to_num_(0.0).to(working),  # padded steps: -inf - -inf
        row=row,
        start_weight=torch.exp(m_in - row).to(working),
        row_stabiliser=(log_f_cum + row).to(working),
        end_weight=torch.exp(u - M[..., -1:]).mul_(scale).to(working),
        decay=torch.exp(m_in - M[..., -1:]).squeeze(-1).to(working),  # (BH, NC)
    )
    return ChunkGates(*(x.flatten(0, 1) for x in gates)), m[:, -1].to(working)


def gate_matrix(gates: ChunkGates, chunks: slice, out: torch.Tensor) -> torch.Tensor:
    """D of the given chunks into ``out`` (n, L, L): D_ts = exp(u_s - row_t) for s <= t, else 0.

    Above the diagonal u_s - row_t may be large: exp2 gives inf there, which tril_ overwrites.
    """
    column, row = gates.column[chunks], gates.row[chunks]  # (n, L) each
    torch.sub(column[:, None, :], row[:, :, None], out=out)  # exact wherever D matters
    torch.add(gates.column_remainder_log2[chunks, None, :], out, alpha=LOG2_E, out=out)  # log2 units
    return out.exp2_().tril_()


def gated_scores(q, k, D, scale: float, out: torch.Tensor) -> torch.Tensor:
    """c~ = scale * (Q K^T) * D into ``out`` (n, L, L), from q, k (n, L, DH) and D (n, L, L)."""
    return out.baddbmm_(q, k.transpose(1, 2), beta=0, alpha=scale).mul_(D)


def normaliser_slope(normaliser, row_stabiliser) -> torch.Tensor:
    """d max(|nrm|, exp(-m)) / d nrm, with torch.maximum's convention (half each on ties)."""
    floor = torch.exp(-row_stabiliser)
    size = normaliser.abs()
    share = torch.where(size > floor, 1.0, torch.where(size == floor, 0.5, 0.0))
    return share * normaliser.sign()
