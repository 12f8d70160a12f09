"""Triton kernels for the gates of the chunkwise mLSTM: per-chunk log-gate vectors (forward) and the gradients
of the gate pre-activations (backward).

Notation (as ``kernels.mlstm.chunkwise_gates``): within a chunk of L steps, b_t is the log forget gate summed
from the chunk start up to and including step t, u_s = i_s - b_s the log weight of step s relative to b, and
M_t = max(max_{s <= t} u_s, m0) with m0 the stabiliser of the state entering the chunk; the row stabiliser is
m_t = b_t + M_t. ``chunk_gates_kernel`` stores b, u and the chunk-local running max of u (M_t without m0);
the other kernels add m0, which only the recurrence over chunks knows.

Steps past S are padded as ``kernels.mlstm.chunking`` pads them: forget gate 1 (log 0), input gate 0 (log -inf).
Sums and running maxima over a chunk are masked reductions of an (L, L) tile: plain, no scan primitive.

Precision: the gate algebra runs in float32 (the torch backend runs it in float64, see ``chunkwise_gates``).
Exponents u_s - M_t carry an absolute error of about 6e-8 |b|, so the gate weights lose about that much relative
precision: nothing for the usual gates (|b| of a chunk below 10), 6e-5 where a chunk's log forget gates sum
to -1000.
"""

import triton
import triton.language as tl


@triton.jit
def log_sigmoid(x):
    """log(sigmoid(x)) without overflow: min(x, 0) - log(1 + exp(-|x|))."""
    return tl.minimum(x, 0.0) - tl.log(1.0 + tl.exp(-tl.abs(x)))


@triton.jit
def chunk_gates_kernel(
    f,
    i,
    b_out,
    u_out,
    u_max_out,  # f, i (B, NH, S); outputs (B * NH, NC * L) float32
    S,
    NC,
    NH,
    stride_f_batch,
    stride_f_head,
    stride_f_time,
    stride_i_batch,
    stride_i_head,
    stride_i_time,
    L: tl.constexpr,
    EXP_FORGET_GATE: tl.constexpr,
):
    """One program per (chunk, head): b, u and the chunk-local running max of u for the chunk's L steps."""
    chunk_head = tl.program_id(0)
    chunk, head_index = chunk_head % NC, chunk_head // NC
    batch, head = head_index // NH, head_index % NH
    steps = tl.arange(0, L)
    time = chunk * L + steps  # (L,)
    valid = time < S
    f_t = tl.load(
        f + batch.to(tl.int64) * stride_f_batch + head * stride_f_head + time * stride_f_time, mask=valid, other=0.0
    ).to(tl.float32)
    i_t = tl.load(
        i + batch.to(tl.int64) * stride_i_batch + head * stride_i_head + time * stride_i_time, mask=valid, other=0.0
    ).to(tl.float32)
    if EXP_FORGET_GATE:
        log_f = f_t
    else:
        log_f = log_sigmoid(f_t)
    log_f = tl.where(valid, log_f, 0.0)  # (L,) padded: forget gate 1
    i_t = tl.where(valid, i_t, float("-inf"))  # (L,) padded: input gate 0
    earlier = steps[None, :] <= steps[:, None]  # (L, L): column s <= row t
    b = tl.sum(tl.where(earlier, log_f[None, :], 0.0), axis=1)  # (L,)
    u = i_t - b  # (L,)
    u_max = tl.max(tl.where(earlier, u[None, :], float("-inf")), axis=1)  # (L,) running max
    offset = head_index.to(tl.int64) * NC * L + time
    tl.store(b_out + offset, b)
    tl.store(u_out + offset, u)
    tl.store(u_max_out + offset, u_max)


@triton.jit
def gate_gradients_kernel(
    f,
    q_dq,
    k_dk,
    boundary,
    df,
    di,
    # f (B, NH, S); q_dq, k_dk (NBK, BH, NC * L) per head-dim block of q.dq and k.dk, float32; boundary
    # (NB, BH, NC) per state block of <dC, C> + <dn, n> at each chunk's end, float32; df, di (B, NH, S)
    S,
    NC,
    NH,
    BH,
    NBK,
    NB,
    stride_f_batch,
    stride_f_head,
    stride_f_time,
    stride_df_batch,
    stride_df_head,
    stride_df_time,
    stride_di_batch,
    stride_di_head,
    stride_di_time,
    L: tl.constexpr,
    EXP_FORGET_GATE: tl.constexpr,
):
    """One program per (chunk, head): di_s = k_s . dk_s and d log f_r = sum_{t >= r} (q_t . dq_t - k_t . dk_t).

    q_t, k_t enter h only as exp(F_t) q_t and exp(i_t - F_t) k_t (F the log forget gates summed from the
    sequence start, the stabilisers constants), and the state after step t as exp(F_t) times a function of
    those, so the sum over the steps after this chunk (and the final state) is <dC, C> + <dn, n> of the state
    leaving the chunk: every sum stays within the chunk.
    """
    chunk_head = tl.program_id(0)
    chunk, head_index = chunk_head % NC, chunk_head // NC
    batch, head = head_index // NH, head_index % NH
    steps = tl.arange(0, L)
    time = chunk * L + steps  # (L,)
    valid = time < S
    q_dq_sum = tl.zeros([L], dtype=tl.float32)
    k_dk_sum = tl.zeros([L], dtype=tl.float32)
    for block in range(NBK):
        offset = (block * BH + head_index).to(tl.int64) * NC * L + time
        q_dq_sum += tl.load(q_dq + offset)
        k_dk_sum += tl.load(k_dk + offset)
    boundary_sum = tl.load(boundary + head_index.to(tl.int64) * NC + chunk)
    for block in range(1, NB):
        boundary_sum += tl.load(boundary + (block * BH + head_index).to(tl.int64) * NC + chunk)
    change = q_dq_sum - k_dk_sum  # (L,) d loss / d F_t through step t's own q and k
    later = steps[None, :] >= steps[:, None]  # (L, L): column t >= row r
    d_log_f = tl.sum(tl.where(later, change[None, :], 0.0), axis=1) + boundary_sum  # (L,)
    if EXP_FORGET_GATE:
        d_f = d_log_f
    else:
        f_t = tl.load(
            f + batch.to(tl.int64) * stride_f_batch + head * stride_f_head + time * stride_f_time, mask=valid, other=0.0
        ).to(tl.float32)
        d_f = d_log_f / (1.0 + tl.exp(f_t))  # d logsigmoid(f) / df = sigmoid(-f)
    tl.store(
        df + batch.to(tl.int64) * stride_df_batch + head * stride_df_head + time * stride_df_time,
        d_f.to(df.dtype.element_ty),
        mask=valid,
    )
    tl.store(
        di + batch.to(tl.int64) * stride_di_batch + head * stride_di_head + time * stride_di_time,
        k_dk_sum.to(di.dtype.element_ty),
        mask=valid,
    )
