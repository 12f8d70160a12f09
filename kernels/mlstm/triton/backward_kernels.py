"""Triton kernels of the chunkwise mLSTM backward within chunks: the normaliser's gradient, the gated score
gradients and dq, dk, dv.

Per chunk (notation of ``forward_kernels``; D_ts = exp(u_s - M_t), w_s = exp(u_s - M_end) step s's weight
in the state leaving the chunk, dC', dn' the gradient of that state), with dnum_t = dh_t / den_t and
dnrm_t = -(dh_t . h_t) slope_t / den_t:

    dS_ts = scale (dnum_t . v_s + dnrm_t) D_ts                        (``score_gradients_kernel``)
    dq_t = sum_s dS_ts k_s + a_t (C dnum_t + dnrm_t n)                (``query_gradients_kernel``)
    dk_s = sum_t dS_ts q_t + scale w_s (dC' v_s + dn')                (``key_gradients_kernel``)
    dv_s = sum_t c~_ts dnum_t + scale w_s dC'^T k_s                   (``value_gradients_kernel``)

dS is written once, like c~ in the forward, and read by the dq and dk kernels for every block of the head
dim. The dq and dk kernels also write their block's part of q_t . dq_t and k_t . dk_t for the gate gradients
(``gate_kernels.gate_gradients_kernel``), summed over the head dim in float32 before dq, dk are rounded.
"""

import triton
import triton.language as tl

from kernels.mlstm.triton.tile_math import gate_matrix, matmul


@triton.jit
def normaliser_gradients_kernel(
    dh,
    h,
    den,
    slope,
    d_normaliser,
    # dh, h (B, NH, S, DHV); den, slope and the output d_normaliser (BH, NC * L) float32
    S,
    NC,
    NH,
    stride_dh_batch,
    stride_dh_head,
    stride_dh_time,
    stride_dh_dim,
    stride_h_batch,
    stride_h_head,
    stride_h_time,
    stride_h_dim,
    DHV: tl.constexpr,
    L: tl.constexpr,
    BL: tl.constexpr,
    BV: tl.constexpr,
):
    """dnrm_t = -(dh_t . h_t) slope_t / den_t; one program per (chunk and head, block of BL rows)."""
    chunk_head, row_block = tl.program_id(0), tl.program_id(1)
    chunk, head_index = chunk_head % NC, chunk_head // NC
    batch, head = head_index // NH, head_index % NH
    rows = row_block * BL + tl.arange(0, BL)
    row_time = chunk * L + rows
    row_valid = row_time < S
    dh_rows = dh + batch.to(tl.int64) * stride_dh_batch + head * stride_dh_head + row_time[:, None] * stride_dh_time
    h_rows = h + batch.to(tl.int64) * stride_h_batch + head * stride_h_head + row_time[:, None] * stride_h_time
    values = tl.arange(0, BV)
    dh_dot_h = tl.zeros([BL], dtype=tl.float32)
    for value_start in range(0, DHV, BV):
        mask = row_valid[:, None] & (value_start + values < DHV)[None, :]
        dh_tile = tl.load(dh_rows + (value_start + values[None, :]) * stride_dh_dim, mask=mask, other=0.0)
        h_tile = tl.load(h_rows + (value_start + values[None, :]) * stride_h_dim, mask=mask, other=0.0)
        dh_dot_h += tl.sum(dh_tile.to(tl.float32) * h_tile.to(tl.float32), axis=1)
    gates_rows = head_index.to(tl.int64) * NC * L + chunk * L + rows
    tl.store(d_normaliser + gates_rows, -dh_dot_h * tl.load(slope + gates_rows) / tl.load(den + gates_rows))


@triton.jit
def score_gradients_kernel(
    dh,
    v,
    u,
    u_max,
    den,
    d_normaliser,
    m_states,
    score_gradients,
    # dh, v (B, NH, S, DHV); u, u_max, den, d_normaliser (BH, NC * L); m_states (BH, NC + 1);
    # output score_gradients (BH, NC, L, L) in v's dtype (tiles above the diagonal untouched)
    S,
    NC,
    NH,
    scale,
    stride_dh_batch,
    stride_dh_head,
    stride_dh_time,
    stride_dh_dim,
    stride_v_batch,
    stride_v_head,
    stride_v_time,
    stride_v_dim,
    DHV: tl.constexpr,
    L: tl.constexpr,
    BL: tl.constexpr,
    BV: tl.constexpr,
    PRECISION: tl.constexpr,
):
    """dS of one block of BL rows against every column block up to the diagonal."""
    chunk_head, row_block = tl.program_id(0), tl.program_id(1)
    chunk, head_index = chunk_head % NC, chunk_head // NC
    batch, head = head_index // NH, head_index % NH
    rows = row_block * BL + tl.arange(0, BL)
    row_time = chunk * L + rows
    row_valid = row_time < S
    gates_chunk = head_index.to(tl.int64) * NC * L + chunk * L
    inverse_den = 1.0 / tl.load(den + gates_chunk + rows)  # (BL,)
    row_gradient = tl.load(d_normaliser + gates_chunk + rows)  # (BL,)
    m = tl.load(m_states + head_index.to(tl.int64) * (NC + 1) + chunk)
    dh_rows = dh + batch.to(tl.int64) * stride_dh_batch + head * stride_dh_head + row_time[:, None] * stride_dh_time
    v_head = v + batch.to(tl.int64) * stride_v_batch + head * stride_v_head
    gradients_chunk = score_gradients + (head_index.to(tl.int64) * NC + chunk) * L * L
    values = tl.arange(0, BV)
    for column_block in range(row_block + 1):
        columns = column_block * BL + tl.arange(0, BL)
        column_time = chunk * L + columns
        dnum_dot_v = tl.zeros([BL, BL], dtype=tl.float32)
        for value_start in range(0, DHV, BV):
            value_valid = value_start + values < DHV
            dh_tile = tl.load(
                dh_rows + (value_start + values[None, :]) * stride_dh_dim,
                mask=row_valid[:, None] & value_valid[None, :],
                other=0.0,
            )  # (BL, BV)
            v_tile = tl.load(
                v_head + column_time[None, :] * stride_v_time + (value_start + values[:, None]) * stride_v_dim,
                mask=(column_time < S)[None, :] & value_valid[:, None],
                other=0.0,
            )  # (BV, BL)
            dnum = (dh_tile.to(tl.float32) * inverse_den[:, None]).to(v_tile.dtype)
            dnum_dot_v += matmul(dnum, v_tile, PRECISION)
        D = gate_matrix(u, u_max, m, gates_chunk, rows, columns)  # (BL, BL)
        dS = (dnum_dot_v + row_gradient[:, None]) * D * scale
        tl.store(gradients_chunk + rows[:, None] * L + columns[None, :], dS.to(score_gradients.dtype.element_ty))


@triton.jit
def query_gradients_kernel(
    q,
    k,
    dh,
    u_max,
    den,
    d_normaliser,
    score_gradients,
    C_states,
    n_states,
    m_states,
    dq,
    q_dq,
    # q, k, dq (B, NH, S, DHK), dh (B, NH, S, DHV); u_max, den, d_normaliser (BH, NC * L); score_gradients
    # (BH, NC, L, L); states as chunk_states_kernel leaves them; q_dq (NBK, BH, NC * L) float32
    S,
    NC,
    NH,
    BH,
    stride_q_batch,
    stride_q_head,
    stride_q_time,
    stride_q_dim,
    stride_k_batch,
    stride_k_head,
    stride_k_time,
    stride_k_dim,
    stride_dh_batch,
    stride_dh_head,
    stride_dh_time,
    stride_dh_dim,
    stride_dq_batch,
    stride_dq_head,
    stride_dq_time,
    stride_dq_dim,
    DHK: tl.constexpr,
    DHV: tl.constexpr,
    L: tl.constexpr,
    BL: tl.constexpr,
    BK: tl.constexpr,
    BV: tl.constexpr,
    PRECISION: tl.constexpr,
):
    """One program per (chunk and head, block of BL rows, block of BK key dims)."""
    chunk_head, row_block, key_block = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    chunk, head_index = chunk_head % NC, chunk_head // NC
    batch, head = head_index // NH, head_index % NH
    rows = row_block * BL + tl.arange(0, BL)
    row_time = chunk * L + rows
    row_valid = row_time < S
    keys = key_block * BK + tl.arange(0, BK)
    key_valid = keys < DHK
    gates_chunk = head_index.to(tl.int64) * NC * L + chunk * L
    inverse_den = 1.0 / tl.load(den + gates_chunk + rows)  # (BL,)
    dh_rows = dh + batch.to(tl.int64) * stride_dh_batch + head * stride_dh_head + row_time[:, None] * stride_dh_time
    C_chunk = C_states + (head_index.to(tl.int64) * (NC + 1) + chunk) * DHK * DHV
    values = tl.arange(0, BV)
    dq_tile = tl.zeros([BL, BK], dtype=tl.float32)  # first C dnum_t + dnrm_t n, then dq_t
    for value_start in range(0, DHV, BV):
        value_valid = value_start + values < DHV
        dh_tile = tl.load(
            dh_rows + (value_start + values[None, :]) * stride_dh_dim,
            mask=row_valid[:, None] & value_valid[None, :],
            other=0.0,
        )  # (BL, BV)
        C_transposed = tl.load(
            C_chunk + keys[None, :] * DHV + value_start + values[:, None],
            mask=key_valid[None, :] & value_valid[:, None],
            other=0.0,
        )  # (BV, BK)
        dnum = (dh_tile.to(tl.float32) * inverse_den[:, None]).to(dh_tile.dtype)
        dq_tile += matmul(dnum, C_transposed.to(dh_tile.dtype), PRECISION)
    n_tile = tl.load(n_states + (head_index.to(tl.int64) * (NC + 1) + chunk) * DHK + keys, mask=key_valid, other=0.0)
    dq_tile += tl.load(d_normaliser + gates_chunk + rows)[:, None] * n_tile[None, :]
    m = tl.load(m_states + head_index.to(tl.int64) * (NC + 1) + chunk)
    start_weight = tl.exp(m - tl.maximum(tl.load(u_max + gates_chunk + rows), m))  # (BL,) a_t
    dq_tile = start_weight[:, None] * dq_tile
    k_head = k + batch.to(tl.int64) * stride_k_batch + head * stride_k_head
    gradients_chunk = score_gradients + (head_index.to(tl.int64) * NC + chunk) * L * L
    for column_block in range(row_block + 1):
        columns = column_block * BL + tl.arange(0, BL)
        column_time = chunk * L + columns
        dS = tl.load(gradients_chunk + rows[:, None] * L + columns[None, :])  # (BL, BL)
        k_tile = tl.load(
            k_head + column_time[:, None] * stride_k_time + keys[None, :] * stride_k_dim,
            mask=(column_time < S)[:, None] & key_valid[None, :],
            other=0.0,
        )  # (BL, BK)
        dq_tile += matmul(dS, k_tile, PRECISION)
    q_tile = tl.load(
        q
        + batch.to(tl.int64) * stride_q_batch
        + head * stride_q_head
        + row_time[:, None] * stride_q_time
        + keys[None, :] * stride_q_dim,
        mask=row_valid[:, None] & key_valid[None, :],
        other=0.0,
    )
    tl.store(
        q_dq + (key_block * BH + head_index).to(tl.int64) * NC * L + chunk * L + rows,
        tl.sum(q_tile.to(tl.float32) * dq_tile, axis=1),
    )
    tl.store(
        dq
        + batch.to(tl.int64) * stride_dq_batch
        + head * stride_dq_head
        + row_time[:, None] * stride_dq_time
        + keys[None, :] * stride_dq_dim,
        dq_tile.to(dq.dtype.element_ty),
        mask=row_valid[:, None] & key_valid[None, :],
    )


@triton.jit
def end_weights(u, u_max, m_states, gates_chunk, columns, state_index, scale, L: tl.constexpr):
    """scale w_s = scale exp(u_s - M_end) for the given steps of a chunk: their weight in the state leaving it."""
    m = tl.load(m_states + state_index)
    M_end = tl.maximum(tl.load(u_max + gates_chunk + L - 1), m)
    return tl.exp(tl.load(u + gates_chunk + columns) - M_end) * scale


@triton.jit
def key_gradients_kernel(
    q,
    k,
    v,
    u,
    u_max,
    m_states,
    score_gradients,
    dC_states,
    dn_states,
    dk,
    k_dk,
    # q, k, dk (B, NH, S, DHK), v (B, NH, S, DHV); u, u_max (BH, NC * L); score_gradients (BH, NC, L, L);
    # dC_states, dn_states as state_gradients_kernel leaves them; k_dk (NBK, BH, NC * L) float32
    S,
    NC,
    NH,
    BH,
    scale,
    stride_q_batch,
    stride_q_head,
    stride_q_time,
    stride_q_dim,
    stride_k_batch,
    stride_k_head,
    stride_k_time,
    stride_k_dim,
    stride_v_batch,
    stride_v_head,
    stride_v_time,
    stride_v_dim,
    stride_dk_batch,
    stride_dk_head,
    stride_dk_time,
    stride_dk_dim,
    DHK: tl.constexpr,
    DHV: tl.constexpr,
    L: tl.constexpr,
    BL: tl.constexpr,
    BK: tl.constexpr,
    BV: tl.constexpr,
    PRECISION: tl.constexpr,
):
    """One program per (chunk and head, block of BL columns (key steps), block of BK key dims)."""
    chunk_head, column_block, key_block = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    chunk, head_index = chunk_head % NC, chunk_head // NC
    batch, head = head_index // NH, head_index % NH
    columns = column_block * BL + tl.arange(0, BL)
    column_time = chunk * L + columns
    column_valid = column_time < S
    keys = key_block * BK + tl.arange(0, BK)
    key_valid = keys < DHK
    v_columns = v + batch.to(tl.int64) * stride_v_batch + head * stride_v_head + column_time[:, None] * stride_v_time
    state_index = head_index.to(tl.int64) * (NC + 1) + chunk + 1  # the state leaving the chunk
    dC_next = dC_states + state_index * DHK * DHV
    values = tl.arange(0, BV)
    dk_tile = tl.zeros([BL, BK], dtype=tl.float32)  # first dC' v_s + dn', then dk_s
    for value_start in range(0, DHV, BV):
        value_valid = value_start + values < DHV
        v_tile = tl.load(
            v_columns + (value_start + values[None, :]) * stride_v_dim,
            mask=column_valid[:, None] & value_valid[None, :],
            other=0.0,
        )  # (BL, BV)
        dC_transposed = tl.load(
            dC_next + keys[None, :] * DHV + value_start + values[:, None],
            mask=key_valid[None, :] & value_valid[:, None],
            other=0.0,
        )  # (BV, BK)
        dk_tile += matmul(v_tile, dC_transposed.to(v_tile.dtype), PRECISION)
    dk_tile += tl.load(dn_states + state_index * DHK + keys, mask=key_valid, other=0.0)[None, :]
    gates_chunk = head_index.to(tl.int64) * NC * L + chunk * L
    weight = end_weights(u, u_max, m_states, gates_chunk, columns, state_index - 1, scale, L)  # (BL,)
    dk_tile = weight[:, None] * dk_tile
    q_head = q + batch.to(tl.int64) * stride_q_batch + head * stride_q_head
    gradients_chunk = score_gradients + (head_index.to(tl.int64) * NC + chunk) * L * L
    for row_block in range(column_block, L // BL):
        rows = row_block * BL + tl.arange(0, BL)
        row_time = chunk * L + rows
        dS_transposed = tl.load(gradients_chunk + rows[None, :] * L + columns[:, None])  # (BL columns, BL rows)
        q_tile = tl.load(
            q_head + row_time[:, None] * stride_q_time + keys[None, :] * stride_q_dim,
            mask=(row_time < S)[:, None] & key_valid[None, :],
            other=0.0,
        )  # (BL, BK)
        dk_tile += matmul(dS_transposed, q_tile, PRECISION)
    k_tile = tl.load(
        k
        + batch.to(tl.int64) * stride_k_batch
        + head * stride_k_head
        + column_time[:, None] * stride_k_time
        + keys[None, :] * stride_k_dim,
        mask=column_valid[:, None] & key_valid[None, :],
        other=0.0,
    )
    tl.store(
        k_dk + (key_block * BH + head_index).to(tl.int64) * NC * L + chunk * L + columns,
        tl.sum(k_tile.to(tl.float32) * dk_tile, axis=1),
    )
    tl.store(
        dk
        + batch.to(tl.int64) * stride_dk_batch
        + head * stride_dk_head
        + column_time[:, None] * stride_dk_time
        + keys[None, :] * stride_dk_dim,
        dk_tile.to(dk.dtype.element_ty),
        mask=column_valid[:, None] & key_valid[None, :],
    )


@triton.jit
def value_gradients_kernel(
    k,
    dh,
    u,
    u_max,
    den,
    m_states,
    scores,
    dC_states,
    dv,
    # k (B, NH, S, DHK), dh, dv (B, NH, S, DHV); u, u_max, den (BH, NC * L); scores (BH, NC, L, L);
    # dC_states as state_gradients_kernel leaves them
    S,
    NC,
    NH,
    scale,
    stride_k_batch,
    stride_k_head,
    stride_k_time,
    stride_k_dim,
    stride_dh_batch,
    stride_dh_head,
    stride_dh_time,
    stride_dh_dim,
    stride_dv_batch,
    stride_dv_head,
    stride_dv_time,
    stride_dv_dim,
    DHK: tl.constexpr,
    DHV: tl.constexpr,
    L: tl.constexpr,
    BL: tl.constexpr,
    BK: tl.constexpr,
    BV: tl.constexpr,
    PRECISION: tl.constexpr,
):
    """One program per (chunk and head, block of BL columns (value steps), block of BV value dims)."""
    chunk_head, column_block, value_block = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    chunk, head_index = chunk_head % NC, chunk_head // NC
    batch, head = head_index // NH, head_index % NH
    columns = column_block * BL + tl.arange(0, BL)
    column_time = chunk * L + columns
    column_valid = column_time < S
    values = value_block * BV + tl.arange(0, BV)
    value_valid = values < DHV
    k_columns = k + batch.to(tl.int64) * stride_k_batch + head * stride_k_head + column_time[:, None] * stride_k_time
    state_index = head_index.to(tl.int64) * (NC + 1) + chunk + 1  # the state leaving the chunk
    dC_next = dC_states + state_index * DHK * DHV
    dims = tl.arange(0, BK)
    dv_tile = tl.zeros([BL, BV], dtype=tl.float32)  # first dC'^T k_s, then dv_s
    for dim_start in range(0, DHK, BK):
        dim_valid = dim_start + dims < DHK
        k_tile = tl.load(
            k_columns + (dim_start + dims[None, :]) * stride_k_dim,
            mask=column_valid[:, None] & dim_valid[None, :],
            other=0.0,
        )  # (BL, BK)
        dC_tile = tl.load(
            dC_next + (dim_start + dims[:, None]) * DHV + values[None, :],
            mask=dim_valid[:, None] & value_valid[None, :],
            other=0.0,
        )  # (BK, BV)
        dv_tile += matmul(k_tile, dC_tile.to(k_tile.dtype), PRECISION)
    gates_chunk = head_index.to(tl.int64) * NC * L + chunk * L
    weight = end_weights(u, u_max, m_states, gates_chunk, columns, state_index - 1, scale, L)  # (BL,)
    dv_tile = weight[:, None] * dv_tile
    dh_head = dh + batch.to(tl.int64) * stride_dh_batch + head * stride_dh_head
    scores_chunk = scores + (head_index.to(tl.int64) * NC + chunk) * L * L
    for row_block in range(column_block, L // BL):
        rows = row_block * BL + tl.arange(0, BL)
        row_time = chunk * L + rows
        c_tilde_transposed = tl.load(scores_chunk + rows[None, :] * L + columns[:, None])  # (BL columns, BL rows)
        dh_tile = tl.load(
            dh_head + row_time[:, None] * stride_dh_time + values[None, :] * stride_dh_dim,
            mask=(row_time < S)[:, None] & value_valid[None, :],
            other=0.0,
        )  # (BL, BV)
        inverse_den = 1.0 / tl.load(den + gates_chunk + rows)
        dnum = (dh_tile.to(tl.float32) * inverse_den[:, None]).to(c_tilde_transposed.dtype)
        dv_tile += matmul(c_tilde_transposed, dnum, PRECISION)
    tl.store(
        dv
        + batch.to(tl.int64) * stride_dv_batch
        + head * stride_dv_head
        + column_time[:, None] * stride_dv_time
        + values[None, :] * stride_dv_dim,
        dv_tile.to(dv.dtype.element_ty),
        mask=column_valid[:, None] & value_valid[None, :],
    )
