"""Triton kernels of the chunkwise mLSTM forward within chunks: gated scores, normaliser and outputs.

Per chunk of L steps entering state (C, n, m0) (notation of ``gate_kernels``), for rows t and columns s <= t:

    c~_ts = scale (q_t . k_s) exp(u_s - M_t),    a_t = exp(m0 - M_t),    m_t = b_t + M_t
    nrm_t = sum_s c~_ts + a_t q_t . n,           den_t = max(|nrm_t|, exp(-m_t)) + eps
    h_t = (sum_s c~_ts v_s + a_t q_t C) / den_t

``gated_scores_kernel`` writes c~ (tiles of BL x BL on and below the diagonal), den_t and the slope of the
max in den_t (d max(|nrm|, exp(-m)) / d nrm, which the backward needs); ``outputs_kernel`` reads c~ back
for every block of h's value dim, so q.k is computed once whatever the head dim. The stabiliser M_t is a
running max known from the gates before any tile (no online rescaling), and equals the torch reference's.
"""

import triton
import triton.language as tl

from kernels.mlstm.triton.tile_math import gate_matrix, matmul


@triton.jit
def gated_scores_kernel(
    q,
    k,
    u,
    u_max,
    b,
    n_states,
    m_states,
    scores,
    den,
    slope,
    # q, k (B, NH, S, DHK); u, u_max, b (BH, NC * L); n_states (BH, NC + 1, DHK), m_states (BH, NC + 1);
    # outputs scores (BH, NC, L, L) in q's dtype (tiles above the diagonal untouched), den and slope (BH, NC * L)
    S,
    NC,
    NH,
    scale,
    eps,
    stride_q_batch,
    stride_q_head,
    stride_q_time,
    stride_q_dim,
    stride_k_batch,
    stride_k_head,
    stride_k_time,
    stride_k_dim,
    DHK: tl.constexpr,
    L: tl.constexpr,
    BL: tl.constexpr,
    BK: tl.constexpr,
    PRECISION: tl.constexpr,
):
    """One program per (chunk and head, block of BL rows)."""
    chunk_head, row_block = tl.program_id(0), tl.program_id(1)
    chunk, head_index = chunk_head % NC, chunk_head // NC
    batch, head = head_index // NH, head_index % NH
    rows = row_block * BL + tl.arange(0, BL)  # (BL,) steps within the chunk
    row_time = chunk * L + rows
    row_valid = row_time < S
    q_rows = q + batch.to(tl.int64) * stride_q_batch + head * stride_q_head + row_time[:, None] * stride_q_time
    k_head = k + batch.to(tl.int64) * stride_k_batch + head * stride_k_head
    gates_chunk = head_index.to(tl.int64) * NC * L + chunk * L
    m = tl.load(m_states + head_index.to(tl.int64) * (NC + 1) + chunk)
    scores_chunk = scores + (head_index.to(tl.int64) * NC + chunk) * L * L
    dims = tl.arange(0, BK)
    normaliser = tl.zeros([BL], dtype=tl.float32)
    for column_block in range(row_block + 1):
        columns = column_block * BL + tl.arange(0, BL)  # (BL,)
        column_time = chunk * L + columns
        qk = tl.zeros([BL, BL], dtype=tl.float32)
        for dim_start in range(0, DHK, BK):
            dim_valid = dim_start + dims < DHK
            q_tile = tl.load(
                q_rows + (dim_start + dims[None, :]) * stride_q_dim,
                mask=row_valid[:, None] & dim_valid[None, :],
                other=0.0,
            )  # (BL, BK)
            k_tile = tl.load(
                k_head + column_time[None, :] * stride_k_time + (dim_start + dims[:, None]) * stride_k_dim,
                mask=(column_time < S)[None, :] & dim_valid[:, None],
                other=0.0,
            )  # (BK, BL)
            qk += matmul(q_tile, k_tile, PRECISION)
        c_tilde = qk * scale * gate_matrix(u, u_max, m, gates_chunk, rows, columns)  # (BL, BL)
        normaliser += tl.sum(c_tilde, axis=1)
        tl.store(scores_chunk + rows[:, None] * L + columns[None, :], c_tilde.to(scores.dtype.element_ty))
    M = tl.maximum(tl.load(u_max + gates_chunk + rows), m)  # (BL,)
    start_weight = tl.exp(m - M)  # (BL,) a_t
    n_chunk = n_states + (head_index.to(tl.int64) * (NC + 1) + chunk) * DHK
    q_dot_n = tl.zeros([BL], dtype=tl.float32)
    for dim_start in range(0, DHK, BK):
        dim_valid = dim_start + dims < DHK
        q_tile = tl.load(
            q_rows + (dim_start + dims[None, :]) * stride_q_dim, mask=row_valid[:, None] & dim_valid[None, :], other=0.0
        ).to(tl.float32)  # (BL, BK)
        n_tile = tl.load(n_chunk + dim_start + dims, mask=dim_valid, other=0.0)  # (BK,)
        q_dot_n += tl.sum(q_tile * n_tile[None, :], axis=1)
    normaliser += start_weight * q_dot_n
    floor = tl.exp(-(tl.load(b + gates_chunk + rows) + M))  # (BL,) exp(-m_t)
    size = tl.abs(normaliser)
    sign = tl.where(normaliser > 0, 1.0, tl.where(normaliser < 0, -1.0, 0.0))
    # torch.maximum's gradient convention: half to each side on a tie
    row_slope = tl.where(size > floor, sign, tl.where(size == floor, 0.5 * sign, 0.0))
    row_den = tl.where(row_valid, tl.maximum(size, floor) + eps, 1.0)  # padded rows: 1, never 0
    tl.store(den + gates_chunk + rows, row_den)
    tl.store(slope + gates_chunk + rows, row_slope)


@triton.jit
def outputs_kernel(
    q,
    v,
    u_max,
    scores,
    den,
    C_states,
    m_states,
    h,
    # q (B, NH, S, DHK), v and h (B, NH, S, DHV); u_max, den (BH, NC * L); scores (BH, NC, L, L);
    # C_states (BH, NC + 1, DHK, DHV), m_states (BH, NC + 1)
    S,
    NC,
    NH,
    stride_q_batch,
    stride_q_head,
    stride_q_time,
    stride_q_dim,
    stride_v_batch,
    stride_v_head,
    stride_v_time,
    stride_v_dim,
    stride_h_batch,
    stride_h_head,
    stride_h_time,
    stride_h_dim,
    DHK: tl.constexpr,
    DHV: tl.constexpr,
    L: tl.constexpr,
    BL: tl.constexpr,
    BK: tl.constexpr,
    BV: tl.constexpr,
    PRECISION: tl.constexpr,
):
    """One program per (chunk and head, block of BL rows, block of BV value dims)."""
    chunk_head, row_block, value_block = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    chunk, head_index = chunk_head % NC, chunk_head // NC
    batch, head = head_index // NH, head_index % NH
    rows = row_block * BL + tl.arange(0, BL)  # (BL,)
    row_time = chunk * L + rows
    row_valid = row_time < S
    values = value_block * BV + tl.arange(0, BV)  # (BV,)
    value_valid = values < DHV
    q_rows = q + batch.to(tl.int64) * stride_q_batch + head * stride_q_head + row_time[:, None] * stride_q_time
    C_chunk = C_states + (head_index.to(tl.int64) * (NC + 1) + chunk) * DHK * DHV
    dims = tl.arange(0, BK)
    numerator = tl.zeros([BL, BV], dtype=tl.float32)  # first q_t C, then a_t q_t C + sum_s c~_ts v_s
    for dim_start in range(0, DHK, BK):
        dim_valid = dim_start + dims < DHK
        q_tile = tl.load(
            q_rows + (dim_start + dims[None, :]) * stride_q_dim, mask=row_valid[:, None] & dim_valid[None, :], other=0.0
        )  # (BL, BK)
        C_tile = tl.load(
            C_chunk + (dim_start + dims[:, None]) * DHV + values[None, :],
            mask=dim_valid[:, None] & value_valid[None, :],
            other=0.0,
        )  # (BK, BV)
        numerator += matmul(q_tile, C_tile.to(q_tile.dtype), PRECISION)
    gates_chunk = head_index.to(tl.int64) * NC * L + chunk * L
    m = tl.load(m_states + head_index.to(tl.int64) * (NC + 1) + chunk)
    start_weight = tl.exp(m - tl.maximum(tl.load(u_max + gates_chunk + rows), m))  # (BL,) a_t
    numerator = start_weight[:, None] * numerator
    v_head = v + batch.to(tl.int64) * stride_v_batch + head * stride_v_head
    scores_chunk = scores + (head_index.to(tl.int64) * NC + chunk) * L * L
    for column_block in range(row_block + 1):
        columns = column_block * BL + tl.arange(0, BL)  # (BL,)
        column_time = chunk * L + columns
        c_tilde = tl.load(scores_chunk + rows[:, None] * L + columns[None, :])  # (BL, BL)
        v_tile = tl.load(
            v_head + column_time[:, None] * stride_v_time + values[None, :] * stride_v_dim,
            mask=(column_time < S)[:, None] & value_valid[None, :],
            other=0.0,
        )  # (BL, BV)
        numerator += matmul(c_tilde, v_tile, PRECISION)
    h_tile = numerator / tl.load(den + gates_chunk + rows)[:, None]
    h_rows = h + batch.to(tl.int64) * stride_h_batch + head * stride_h_head + row_time[:, None] * stride_h_time
    tl.store(
        h_rows + values[None, :] * stride_h_dim,
        h_tile.to(h.dtype.element_ty),
        mask=row_valid[:, None] & value_valid[None, :],
    )
