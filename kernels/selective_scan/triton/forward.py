"""Forward Triton kernel of the selective scan: one program per (block of BLOCK_D channels, batch row).

The program keeps the float32 state (BLOCK_D, BLOCK_N) of its channels and walks the sequence in chunks of CHUNK
steps: it loads x, dt (CHUNK, BLOCK_D) and B, C (CHUNK, BLOCK_N) of a chunk, forms the states of every step of the
chunk with an associative scan along the steps from the state entering it, writes ``y_t = C_t h_t + D x_t`` and
carries the chunk's last state on. Steps after the sequence's end are masked to dt = 0 (decay 1, no input), which
keeps the state. It can write the state entering every chunk (the backward's starting points) and skip y (the
backward reruns it that way when the forward kept nothing). Row offsets are int64 (batch x stride, step x stride),
so no offset overflows 32 bits.
"""

import triton
import triton.language as tl

from kernels.selective_scan.triton.chunk_math import chunk_states, load_rows, row

LOG2_E = tl.constexpr(1.4426950408889634)  # exp(v) = exp2(v log2(e))


@triton.jit
def _forward_kernel(
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
    initial_state,  # (B, DI, N) contiguous (read if HAS_INITIAL_STATE)
    y,  # (B, S, DI) contiguous, written if STORE_Y
    final_state,  # (B, DI, N) float32 contiguous, written
    chunk_starts,  # (B, NC, DI, N) float32 contiguous: the state entering each chunk, written if STORE_CHUNK_STARTS
    seq_len,
    inner_dim,
    state_dim,
    HAS_D: tl.constexpr,
    HAS_INITIAL_STATE: tl.constexpr,
    STORE_Y: tl.constexpr,
    STORE_CHUNK_STARTS: tl.constexpr,
    CHUNK: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    batch = tl.program_id(1).to(tl.int64)
    dims = tl.program_id(0) * BLOCK_D + tl.arange(0, BLOCK_D)  # (BLOCK_D,)
    states = tl.arange(0, BLOCK_N)  # (BLOCK_N,)
    steps = tl.arange(0, CHUNK)  # (CHUNK,)
    dim_mask = dims < inner_dim
    state_mask = states < state_dim
    channel_mask = dim_mask[:, None] & state_mask[None, :]  # (BLOCK_D, BLOCK_N)
    channel_offsets = dims[:, None] * state_dim + states[None, :]  # into (DI, N)
    A_log2 = tl.load(A + channel_offsets, mask=channel_mask, other=0.0).to(tl.float32) * LOG2_E  # (BLOCK_D, BLOCK_N)
    if HAS_INITIAL_STATE:
        state = tl.load(
            initial_state + batch * inner_dim * state_dim + channel_offsets, mask=channel_mask, other=0.0
        ).to(tl.float32)  # (BLOCK_D, BLOCK_N)
    else:
        state = tl.zeros((BLOCK_D, BLOCK_N), dtype=tl.float32)
    if HAS_D:
        skip = tl.load(D + dims, mask=dim_mask, other=0.0).to(tl.float32)  # (BLOCK_D,)
    x_row = x + batch * stride_x_batch + dims * stride_x_dim  # (BLOCK_D,) pointers at step 0
    dt_row = dt + batch * stride_dt_batch + dims * stride_dt_dim
    B_row = B + batch * stride_b_batch + states * stride_b_state  # (BLOCK_N,)
    C_row = C + batch * stride_c_batch + states * stride_c_state
    y_row = y + batch * seq_len * inner_dim + dims
    num_chunks = tl.cdiv(seq_len, CHUNK)
    chunk_start = chunk_starts + batch * num_chunks * inner_dim * state_dim + channel_offsets  # chunk 0, moved on
    # the tiles of the chunk to work on next, loaded one iteration ahead: (CHUNK, BLOCK_D), (CHUNK, BLOCK_N)
    x_ahead = load_rows(x_row, stride_x_time, 0, steps, seq_len, dim_mask)
    dt_ahead = load_rows(dt_row, stride_dt_time, 0, steps, seq_len, dim_mask)
    B_ahead = load_rows(B_row, stride_b_time, 0, steps, seq_len, state_mask)
    C_ahead = load_rows(C_row, stride_c_time, 0, steps, seq_len, state_mask & STORE_Y)
    for chunk in range(num_chunks):
        x_chunk, dt_chunk = x_ahead.to(tl.float32), dt_ahead.to(tl.float32)  # (CHUNK, BLOCK_D)
        B_chunk, C_chunk = B_ahead.to(tl.float32), C_ahead.to(tl.float32)  # (CHUNK, BLOCK_N)
        following = (chunk + 1) * CHUNK
        x_ahead = load_rows(x_row, stride_x_time, following, steps, seq_len, dim_mask)
        dt_ahead = load_rows(dt_row, stride_dt_time, following, steps, seq_len, dim_mask)
        B_ahead = load_rows(B_row, stride_b_time, following, steps, seq_len, state_mask)
        C_ahead = load_rows(C_row, stride_c_time, following, steps, seq_len, state_mask & STORE_Y)
        if STORE_CHUNK_STARTS:
            tl.store(chunk_start, state, mask=channel_mask)
            chunk_start += inner_dim * state_dim
        _, states_chunk = chunk_states(dt_chunk, dt_chunk * x_chunk, B_chunk, A_log2, state, steps)  # (CHUNK, BD, BN)
        state = row(states_chunk, steps, CHUNK - 1)  # padded steps keep the state
        if STORE_Y:
            y_chunk = tl.sum(states_chunk * C_chunk[:, None, :], axis=2)  # (CHUNK, BLOCK_D)
            if HAS_D:
                y_chunk += skip[None, :] * x_chunk
            time = chunk * CHUNK + steps  # (CHUNK,)
            tile_mask = (time < seq_len)[:, None] & dim_mask[None, :]  # (CHUNK, BLOCK_D)
            tl.store(
                y_row[None, :] + time.to(tl.int64)[:, None] * inner_dim, y_chunk.to(y.dtype.element_ty), mask=tile_mask
            )
    tl.store(final_state + batch * inner_dim * state_dim + channel_offsets, state, mask=channel_mask)


def launch_forward(
    x, dt, A, B, C, D, initial_state, y, final_state, chunk_starts, *, chunk: int, block_d: int, num_warps: int
) -> None:
    """Fill ``final_state`` (B, DI, N) and, where given, y (B, S, DI) and ``chunk_starts`` (B, NC, DI, N). A, D and
    ``initial_state`` contiguous; x, dt, B, C any strides."""
    batch, seq_len, inner_dim = x.shape
    state_dim = A.shape[1]
    grid = (triton.cdiv(inner_dim, block_d), batch)
    _forward_kernel[grid](
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
        initial_state if initial_state is not None else A,
        y if y is not None else final_state,
        final_state,
        chunk_starts if chunk_starts is not None else final_state,
        seq_len,
        inner_dim,
        state_dim,
        HAS_D=D is not None,
        HAS_INITIAL_STATE=initial_state is not None,
        STORE_Y=y is not None,
        STORE_CHUNK_STARTS=chunk_starts is not None,
        CHUNK=chunk,
        BLOCK_D=block_d,
        BLOCK_N=triton.next_power_of_2(state_dim),
        num_warps=num_warps,
    )
