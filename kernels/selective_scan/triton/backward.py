"""Backward Triton kernel of the selective scan: one program per (block of BLOCK_D channels, batch row), walking
the chunks from the last to the first.

Per chunk it recomputes the states h_t (CHUNK, BLOCK_D, BLOCK_N) from the state entering the chunk (which the
forward wrote), then runs the adjoint recurrence ``g_t = C_t dy_t + a_{t+1} g_{t+1}`` (g_t = dL/dh_t) backwards
through the chunk with an associative scan, the decays a_{t+1} read one step ahead, the last step's taken from the
carry ``a_T g_T`` of the chunk after (at the sequence's end: the final state's gradient). With h_{t-1} the states
shifted one step (a scan that passes each step the value before it, ``chunk_math.shifted``):

    dL/d(dt_t A) = g_t a_t h_{t-1}          dL/dA += sum_t dt_t dL/d(dt_t A)
    dL/d(dt_t x_t) = sum_n g_t B_t          dL/dB_t = sum_d g_t dt_t x_t          dL/dC_t = sum_d h_t dy_t
    dL/ddt_t = sum_n A dL/d(dt_t A) + x_t dL/d(dt_t x_t)        dL/dx_t = dt_t dL/d(dt_t x_t) + D dy_t

The gradients of x and dt are written in their dtypes; those summed over channels (B, C) or over the sequence (A,
D) are written per channel block or per batch row in float32 for the caller to sum, so no two programs write one
address (no atomics: the result does not depend on the order programs run in). The carry after the first chunk,
``a_0 g_0``, is the initial state's gradient.
"""

import triton
import triton.language as tl

from kernels.selective_scan.triton.chunk_math import chunk_states, compose, load_rows, on_row, row, shifted
from kernels.selective_scan.triton.forward import LOG2_E


@triton.jit
def _backward_kernel(
    x,
    stride_x_batch,
    stride_x_time,
    stride_x_dim,  # (B, S, DI)
    dt,
    stride_dt_batch,
    stride_dt_time,
    stride_dt_dim,  # (B, S, DI)
    A,  # (DI, N) contiguous
    B,
    stride_b_batch,
    stride_b_time,
    stride_b_state,  # (B, S, N)
    C,
    stride_c_batch,
    stride_c_time,
    stride_c_state,  # (B, S, N)
    D,  # (DI,) contiguous (read if HAS_D)
    grad_y,
    stride_gy_batch,
    stride_gy_time,
    stride_gy_dim,  # (B, S, DI)
    grad_final_state,  # (B, DI, N) float32 contiguous (read if HAS_GRAD_FINAL_STATE)
    chunk_starts,  # (B, NC, DI, N) float32 contiguous: the state entering each chunk
    grad_x,
    grad_dt,  # (B, S, DI) contiguous, in the dtypes of x and dt: written
    grad_A_rows,  # (B, DI, N) float32 contiguous: each batch row's part of dL/dA, written
    grad_B_blocks,
    grad_C_blocks,  # (NDB, B, S, N) float32 contiguous: each channel block's part, written
    grad_D_rows,  # (B, DI) float32 contiguous: each batch row's part of dL/dD, written if HAS_D
    grad_initial_state,  # (B, DI, N) float32 contiguous, written if HAS_INITIAL_STATE
    batch_size,
    seq_len,
    inner_dim,
    state_dim,
    HAS_D: tl.constexpr,
    HAS_GRAD_FINAL_STATE: tl.constexpr,
    HAS_INITIAL_STATE: tl.constexpr,
    CHUNK: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    dim_block = tl.program_id(0)
    batch = tl.program_id(1).to(tl.int64)
    dims = dim_block * BLOCK_D + tl.arange(0, BLOCK_D)  # (BLOCK_D,)
    states = tl.arange(0, BLOCK_N)  # (BLOCK_N,)
    steps = tl.arange(0, CHUNK)  # (CHUNK,)
    dim_mask = dims < inner_dim
    state_mask = states < state_dim
    channel_mask = dim_mask[:, None] & state_mask[None, :]  # (BLOCK_D, BLOCK_N)
    channel_offsets = dims[:, None] * state_dim + states[None, :]  # into (DI, N)
    A_channels = tl.load(A + channel_offsets, mask=channel_mask, other=0.0).to(tl.float32)  # (BLOCK_D, BLOCK_N)
    A_log2 = A_channels * LOG2_E
    batch_channels = batch * inner_dim * state_dim + channel_offsets  # into (B, DI, N)
    if HAS_GRAD_FINAL_STATE:
        carry = tl.load(grad_final_state + batch_channels, mask=channel_mask, other=0.0)  # a_T g_T, (BD, BN)
    else:
        carry = tl.zeros((BLOCK_D, BLOCK_N), dtype=tl.float32)
    if HAS_D:
        skip = tl.load(D + dims, mask=dim_mask, other=0.0).to(tl.float32)  # (BLOCK_D,)
    grad_A = tl.zeros((BLOCK_D, BLOCK_N), dtype=tl.float32)
    grad_D = tl.zeros((BLOCK_D,), dtype=tl.float32)
    x_row = x + batch * stride_x_batch + dims * stride_x_dim  # (BLOCK_D,) pointers at step 0
    dt_row = dt + batch * stride_dt_batch + dims * stride_dt_dim
    grad_y_row = grad_y + batch * stride_gy_batch + dims * stride_gy_dim
    B_row = B + batch * stride_b_batch + states * stride_b_state  # (BLOCK_N,)
    C_row = C + batch * stride_c_batch + states * stride_c_state
    output_row = batch * seq_len * inner_dim + dims  # (BLOCK_D,) into (B, S, DI) at step 0
    block_row = (dim_block * batch_size + batch) * seq_len * state_dim + states  # (BLOCK_N,) into (NDB, B, S, N)
    num_chunks = tl.cdiv(seq_len, CHUNK)
    chunk_start = chunk_starts + (batch * num_chunks + num_chunks - 1) * inner_dim * state_dim + channel_offsets
    last = (num_chunks - 1) * CHUNK  # the first step of the last chunk
    # the tiles of the chunk to work on next, loaded one iteration ahead: (CHUNK, BLOCK_D), (CHUNK, BLOCK_N)
    x_ahead = load_rows(x_row, stride_x_time, last, steps, seq_len, dim_mask)
    dt_ahead = load_rows(dt_row, stride_dt_time, last, steps, seq_len, dim_mask)
    dt_following_ahead = load_rows(dt_row, stride_dt_time, last + 1, steps, seq_len, dim_mask)  # dt_{t+1}
    grad_y_ahead = load_rows(grad_y_row, stride_gy_time, last, steps, seq_len, dim_mask)
    B_ahead = load_rows(B_row, stride_b_time, last, steps, seq_len, state_mask)
    C_ahead = load_rows(C_row, stride_c_time, last, steps, seq_len, state_mask)
    start_ahead = tl.load(chunk_start, mask=channel_mask, other=0.0)  # (BLOCK_D, BLOCK_N)
    for chunk_from_end in range(num_chunks):
        x_chunk, dt_chunk = x_ahead.to(tl.float32), dt_ahead.to(tl.float32)  # (CHUNK, BLOCK_D)
        grad_y_chunk = grad_y_ahead.to(tl.float32)
        # (CHUNK, BLOCK_D): dt_{t+1}, 0 (decay 1) on the last step, whose a_{t+1} is in the carry
        dt_following = tl.where(steps[:, None] < CHUNK - 1, dt_following_ahead.to(tl.float32), 0.0)
        B_chunk, C_chunk, start = B_ahead.to(tl.float32), C_ahead.to(tl.float32), start_ahead
        first = (num_chunks - 1 - chunk_from_end) * CHUNK
        before = first - CHUNK  # the chunk before, loaded during this one's work
        x_ahead = load_rows(x_row, stride_x_time, before, steps, seq_len, dim_mask)
        dt_ahead = load_rows(dt_row, stride_dt_time, before, steps, seq_len, dim_mask)
        dt_following_ahead = load_rows(dt_row, stride_dt_time, before + 1, steps, seq_len, dim_mask)
        grad_y_ahead = load_rows(grad_y_row, stride_gy_time, before, steps, seq_len, dim_mask)
        B_ahead = load_rows(B_row, stride_b_time, before, steps, seq_len, state_mask)
        C_ahead = load_rows(C_row, stride_c_time, before, steps, seq_len, state_mask)
        chunk_start -= (chunk_from_end < num_chunks - 1) * (inner_dim * state_dim)  # stays on chunk 0 at the end
        start_ahead = tl.load(chunk_start, mask=channel_mask, other=0.0)
        time = first + steps  # (CHUNK,)
        time_mask = time < seq_len
        time_64 = time.to(tl.int64)[:, None]  # (CHUNK, 1)
        tile_mask = time_mask[:, None] & dim_mask[None, :]  # (CHUNK, BLOCK_D)
        state_tile_mask = time_mask[:, None] & state_mask[None, :]  # (CHUNK, BLOCK_N)

        dtx = dt_chunk * x_chunk  # (CHUNK, BLOCK_D)
        decay, states_chunk = chunk_states(dt_chunk, dtx, B_chunk, A_log2, start, steps)  # (CHUNK, BD, BN)
        decay_next = tl.exp2(dt_following[:, :, None] * A_log2[None, :, :])  # (CHUNK, BD, BN): a_{t+1}
        grad_through_y = grad_y_chunk[:, :, None] * C_chunk[:, None, :]  # (CHUNK, BD, BN): C_t dy_t
        grad_through_y = on_row(grad_through_y, steps, CHUNK - 1, carry)  # g_{T-1} = C dy + a_T g_T
        _, grad_states = tl.associative_scan((decay_next, grad_through_y), 0, compose, reverse=True)  # g_t
        carry = row(decay * grad_states, steps, 0)  # a_0 g_0 into the chunk before

        grad_log_decay = grad_states * decay * shifted(states_chunk, start)  # (CHUNK, BD, BN): dL/d(dt_t A)
        grad_A += tl.sum(grad_log_decay * dt_chunk[:, :, None], axis=0)
        grad_dtx = tl.sum(grad_states * B_chunk[:, None, :], axis=2)  # (CHUNK, BLOCK_D)
        grad_dt_chunk = tl.sum(grad_log_decay * A_channels[None, :, :], axis=2) + grad_dtx * x_chunk
        grad_x_chunk = grad_dtx * dt_chunk
        if HAS_D:
            grad_x_chunk += grad_y_chunk * skip[None, :]
            grad_D += tl.sum(grad_y_chunk * x_chunk, axis=0)
        outputs = output_row[None, :] + time_64 * inner_dim  # (CHUNK, BLOCK_D)
        tl.store(grad_x + outputs, grad_x_chunk.to(grad_x.dtype.element_ty), mask=tile_mask)
        tl.store(grad_dt + outputs, grad_dt_chunk.to(grad_dt.dtype.element_ty), mask=tile_mask)
        blocks = block_row[None, :] + time_64 * state_dim  # (CHUNK, BLOCK_N)
        tl.store(grad_B_blocks + blocks, tl.sum(grad_states * dtx[:, :, None], axis=1), mask=state_tile_mask)
        tl.store(grad_C_blocks + blocks, tl.sum(states_chunk * grad_y_chunk[:, :, None], axis=1), mask=state_tile_mask)
    tl.store(grad_A_rows + batch_channels, grad_A, mask=channel_mask)
    if HAS_D:
        tl.store(grad_D_rows + batch * inner_dim + dims, grad_D, mask=dim_mask)
    if HAS_INITIAL_STATE:
        tl.store(grad_initial_state + batch_channels, carry, mask=channel_mask)


def launch_backward(
    x,
    dt,
    A,
    B,
    C,
    D,
    grad_y,
    grad_final_state,
    chunk_starts,
    grad_x,
    grad_dt,
    grad_A_rows,
    grad_B_blocks,
    grad_C_blocks,
    grad_D_rows,
    grad_initial_state,
    *,
    chunk: int,
    block_d: int,
    num_warps: int,
) -> None:
    """Fill the gradient buffers (see ``_backward_kernel``); ``grad_final_state``, ``grad_D_rows`` and
    ``grad_initial_state`` may be None (no final-state gradient, no D, no initial state)."""
    batch, seq_len, inner_dim = x.shape
    state_dim = A.shape[1]
    grid = (triton.cdiv(inner_dim, block_d), batch)
    _backward_kernel[grid](
        x,
        *x.stride(),
        dt,
        *dt.stride(),
        A,
        B,
        *B.stride(),
        C,
        *C.stride(),
        D if D is not None else A,
        grad_y,
        *grad_y.stride(),
        grad_final_state if grad_final_state is not None else A,
        chunk_starts,
        grad_x,
        grad_dt,
        grad_A_rows,
        grad_B_blocks,
        grad_C_blocks,
        grad_D_rows if grad_D_rows is not None else grad_A_rows,
        grad_initial_state if grad_initial_state is not None else grad_A_rows,
        batch,
        seq_len,
        inner_dim,
        state_dim,
        HAS_D=D is not None,
        HAS_GRAD_FINAL_STATE=grad_final_state is not None,
        HAS_INITIAL_STATE=grad_initial_state is not None,
        CHUNK=chunk,
        BLOCK_D=block_d,
        BLOCK_N=triton.next_power_of_2(state_dim),
        num_warps=num_warps,
    )
