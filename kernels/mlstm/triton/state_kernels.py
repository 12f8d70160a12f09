"""Triton kernels of the recurrence across chunks: the states entering every chunk (forward) and the gradients
of the states leaving every chunk (backward).

One program per (head, block of C's key dim, block of its value dim) runs over the chunks in order; the
matmul of a chunk (its keys against its values, or its queries against its output gradients) runs over
tiles of BL steps, whose loads do not depend on the state and so overlap the previous tile's work. Each
program also carries its block of n (used where the value block is the first) and m (stored by the first
program of a head).

Per chunk (notation of ``gate_kernels``), with M_end = M_{L-1} = max(u_max_{L-1}, m0):

    C_next = exp(m0 - M_end) C + sum_s exp(u_s - M_end) (scale k_s) v_s^T,    m_next = b_{L-1} + M_end

and going back, with a_t = exp(m0 - M_t), dnum_t = dh_t / den_t and dnrm_t the normaliser's gradient:

    dC = exp(m0 - M_end) dC_next + sum_t a_t q_t dnum_t^T,    dn = exp(m0 - M_end) dn_next + sum_t a_t dnrm_t q_t
"""

import triton
import triton.language as tl

from kernels.mlstm.triton.tile_math import matmul


@triton.jit
def chunk_states_kernel(
    k,
    v,
    u,
    u_max,
    b,
    C0,
    n0,
    m0,
    C_states,
    n_states,
    m_states,
    # k, v (B, NH, S, DH); u, u_max, b (BH, NC * L) float32; C0 (B, NH, DHK, DHV), n0 (B, NH, DHK), m0 (BH,);
    # outputs C_states (BH, NC + 1, DHK, DHV), n_states (BH, NC + 1, DHK), m_states (BH, NC + 1) float32:
    # index c holds the state entering chunk c, index NC the final state
    S,
    NC,
    NH,
    scale,
    stride_k_batch,
    stride_k_head,
    stride_k_time,
    stride_k_dim,
    stride_v_batch,
    stride_v_head,
    stride_v_time,
    stride_v_dim,
    stride_C0_batch,
    stride_C0_head,
    stride_C0_key,
    stride_C0_value,
    stride_n0_batch,
    stride_n0_head,
    stride_n0_key,
    DHK: tl.constexpr,
    DHV: tl.constexpr,
    L: tl.constexpr,
    BL: tl.constexpr,
    BK: tl.constexpr,
    BV: tl.constexpr,
    HAS_INITIAL_STATE: tl.constexpr,
    PRECISION: tl.constexpr,
):
    head_index, key_block, value_block = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    batch, head = head_index // NH, head_index % NH
    keys = key_block * BK + tl.arange(0, BK)  # (BK,)
    values = value_block * BV + tl.arange(0, BV)  # (BV,)
    state_mask = (keys < DHK)[:, None] & (values < DHV)[None, :]  # (BK, BV)
    n_mask = keys < tl.where(value_block == 0, DHK, 0)  # (BK,) the first value block carries n
    if HAS_INITIAL_STATE:
        C = tl.load(
            C0
            + batch.to(tl.int64) * stride_C0_batch
            + head * stride_C0_head
            + keys[:, None] * stride_C0_key
            + values[None, :] * stride_C0_value,
            mask=state_mask,
            other=0.0,
        ).to(tl.float32)
        n = tl.load(
            n0 + batch.to(tl.int64) * stride_n0_batch + head * stride_n0_head + keys * stride_n0_key,
            mask=n_mask,
            other=0.0,
        ).to(tl.float32)
    else:
        C = tl.zeros([BK, BV], dtype=tl.float32)
        n = tl.zeros([BK], dtype=tl.float32)
    m = tl.load(m0 + head_index).to(tl.float32)

    k_head = k + batch.to(tl.int64) * stride_k_batch + head * stride_k_head
    v_head = v + batch.to(tl.int64) * stride_v_batch + head * stride_v_head
    state_size = head_index.to(tl.int64) * 0 + DHK * DHV  # int64: chunk * state_size may pass 2**31
    C_head = C_states + head_index.to(tl.int64) * (NC + 1) * DHK * DHV + keys[:, None] * DHV + values[None, :]
    n_head = n_states + head_index.to(tl.int64) * (NC + 1) * DHK + keys
    m_head = m_states + head_index.to(tl.int64) * (NC + 1)
    gates_head = head_index.to(tl.int64) * NC * L
    steps = tl.arange(0, BL)
    for chunk in range(NC):
        tl.store(C_head + chunk * state_size, C, mask=state_mask)
        tl.store(n_head + chunk * DHK, n, mask=n_mask)
        tl.store(m_head + chunk, m, mask=(key_block == 0) & (value_block == 0))
        last = gates_head + chunk * L + L - 1
        M_end = tl.maximum(tl.load(u_max + last), m)
        m_next = tl.load(b + last) + M_end
        decay = tl.exp(m - M_end)  # 0 where m = -inf (no history)
        C = decay * C
        n = decay * n
        for tile in range(L // BL):
            time = chunk * L + tile * BL + steps  # (BL,)
            valid = time < S
            weight = tl.exp(tl.load(u + gates_head + chunk * L + tile * BL + steps) - M_end) * scale  # (BL,)
            k_tile = tl.load(
                k_head + time[None, :] * stride_k_time + keys[:, None] * stride_k_dim,
                mask=valid[None, :] & (keys < DHK)[:, None],
                other=0.0,
            )  # (BK, BL)
            v_tile = tl.load(
                v_head + time[:, None] * stride_v_time + values[None, :] * stride_v_dim,
                mask=valid[:, None] & (values < DHV)[None, :],
                other=0.0,
            )  # (BL, BV)
            weighted_k = k_tile.to(tl.float32) * weight[None, :]  # (BK, BL)
            C += matmul(weighted_k.to(v_tile.dtype), v_tile, PRECISION)
            n += tl.sum(weighted_k, axis=1)
        m = m_next
    tl.store(C_head + NC * state_size, C, mask=state_mask)
    tl.store(n_head + NC * DHK, n, mask=n_mask)
    tl.store(m_head + NC, m, mask=(key_block == 0) & (value_block == 0))


@triton.jit
def state_gradients_kernel(
    q,
    dh,
    u_max,
    den,
    d_normaliser,
    m_states,
    C_states,
    n_states,
    dC_final,
    dn_final,
    dC_states,
    dn_states,
    boundary,
    # q (B, NH, S, DHK), dh (B, NH, S, DHV); u_max, den, d_normaliser (BH, NC * L), m_states (BH, NC + 1),
    # C_states, n_states as chunk_states_kernel leaves them; dC_final (B, NH, DHK, DHV), dn_final (B, NH, DHK);
    # outputs dC_states (BH, NC + 1, DHK, DHV), dn_states (BH, NC + 1, DHK) float32, index c + 1 the gradient
    # of the state leaving chunk c and index 0 that of the initial state, and boundary (NBK * NBV, BH, NC)
    # float32: each block's part of <dC, C> + <dn, n> of the state leaving each chunk
    S,
    NC,
    NH,
    BH,
    stride_q_batch,
    stride_q_head,
    stride_q_time,
    stride_q_dim,
    stride_dh_batch,
    stride_dh_head,
    stride_dh_time,
    stride_dh_dim,
    stride_dC_batch,
    stride_dC_head,
    stride_dC_key,
    stride_dC_value,
    stride_dn_batch,
    stride_dn_head,
    stride_dn_key,
    DHK: tl.constexpr,
    DHV: tl.constexpr,
    L: tl.constexpr,
    BL: tl.constexpr,
    BK: tl.constexpr,
    BV: tl.constexpr,
    HAS_FINAL_C_GRADIENT: tl.constexpr,
    HAS_FINAL_N_GRADIENT: tl.constexpr,
    PRECISION: tl.constexpr,
):
    head_index, key_block, value_block = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    batch, head = head_index // NH, head_index % NH
    keys = key_block * BK + tl.arange(0, BK)  # (BK,)
    values = value_block * BV + tl.arange(0, BV)  # (BV,)
    state_mask = (keys < DHK)[:, None] & (values < DHV)[None, :]  # (BK, BV)
    n_mask = keys < tl.where(value_block == 0, DHK, 0)  # (BK,) the first value block carries n
    if HAS_FINAL_C_GRADIENT:
        dC = tl.load(
            dC_final
            + batch.to(tl.int64) * stride_dC_batch
            + head * stride_dC_head
            + keys[:, None] * stride_dC_key
            + values[None, :] * stride_dC_value,
            mask=state_mask,
            other=0.0,
        ).to(tl.float32)
    else:
        dC = tl.zeros([BK, BV], dtype=tl.float32)
    if HAS_FINAL_N_GRADIENT:
        dn = tl.load(
            dn_final + batch.to(tl.int64) * stride_dn_batch + head * stride_dn_head + keys * stride_dn_key,
            mask=n_mask,
            other=0.0,
        ).to(tl.float32)
    else:
        dn = tl.zeros([BK], dtype=tl.float32)

    q_head = q + batch.to(tl.int64) * stride_q_batch + head * stride_q_head
    dh_head = dh + batch.to(tl.int64) * stride_dh_batch + head * stride_dh_head
    state_size = head_index.to(tl.int64) * 0 + DHK * DHV  # int64: chunk * state_size may pass 2**31
    state_offsets = head_index.to(tl.int64) * (NC + 1) * DHK * DHV + keys[:, None] * DHV + values[None, :]
    n_offsets = head_index.to(tl.int64) * (NC + 1) * DHK + keys
    boundary_head = boundary + ((key_block * tl.num_programs(2) + value_block) * BH + head_index).to(tl.int64) * NC
    gates_head = head_index.to(tl.int64) * NC * L
    steps = tl.arange(0, BL)
    for reversed_chunk in range(NC):
        chunk = NC - 1 - reversed_chunk
        # dC, dn: the gradient of the state leaving this chunk
        tl.store(dC_states + state_offsets + (chunk + 1) * state_size, dC, mask=state_mask)
        tl.store(dn_states + n_offsets + (chunk + 1) * DHK, dn, mask=n_mask)
        C_next = tl.load(C_states + state_offsets + (chunk + 1) * state_size, mask=state_mask, other=0.0)
        n_next = tl.load(n_states + n_offsets + (chunk + 1) * DHK, mask=n_mask, other=0.0)
        tl.store(boundary_head + chunk, tl.sum(tl.sum(dC * C_next, axis=1), axis=0) + tl.sum(dn * n_next, axis=0))
        m = tl.load(m_states + head_index.to(tl.int64) * (NC + 1) + chunk)
        M_end = tl.maximum(tl.load(u_max + gates_head + chunk * L + L - 1), m)
        decay = tl.exp(m - M_end)
        dC = decay * dC
        dn = decay * dn
        for tile in range(L // BL):
            gate_offsets = gates_head + chunk * L + tile * BL + steps  # (BL,)
            time = chunk * L + tile * BL + steps  # (BL,)
            valid = time < S
            start_weight = tl.exp(m - tl.maximum(tl.load(u_max + gate_offsets), m))  # (BL,) a_t
            row_scale = start_weight / tl.load(den + gate_offsets)  # (BL,) a_t / den_t
            dh_tile = tl.load(
                dh_head + time[:, None] * stride_dh_time + values[None, :] * stride_dh_dim,
                mask=valid[:, None] & (values < DHV)[None, :],
                other=0.0,
            )  # (BL, BV)
            q_tile = tl.load(
                q_head + time[None, :] * stride_q_time + keys[:, None] * stride_q_dim,
                mask=valid[None, :] & (keys < DHK)[:, None],
                other=0.0,
            )  # (BK, BL)
            scaled_dh = (dh_tile.to(tl.float32) * row_scale[:, None]).to(q_tile.dtype)  # (BL, BV) a_t dnum_t
            dC += matmul(q_tile, scaled_dh, PRECISION)
            normaliser_weight = start_weight * tl.load(d_normaliser + gate_offsets)  # (BL,) a_t dnrm_t
            dn += tl.sum(q_tile.to(tl.float32) * normaliser_weight[None, :], axis=1)
    tl.store(dC_states + state_offsets, dC, mask=state_mask)
    tl.store(dn_states + n_offsets, dn, mask=n_mask)
