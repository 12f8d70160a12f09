"""The selective scan on the Triton kernels as one autograd node: tiles, buffers, and the sums of the partial
gradients.

Dtypes: x, dt, A, B, C, D and the initial state are read in their own dtypes (float32, bfloat16 or float16, mixed
as autocast leaves them) and computed in float32, as the torch backend and mamba_ssm do; y is written in x's dtype,
the final state in float32 (the caller casts it). Each gradient is returned in its input's dtype.

Memory: the forward keeps the state entering every chunk for the backward, float32 (B, S / CHUNK, DI, N), where
that takes no more memory than x and dt together (4 N / CHUNK bytes against their sizes per (batch, step,
channel)); else the backward runs the forward kernel again to write them, so a stack of layers never holds them
all. The backward writes the gradients of B and C per channel block, float32 (DI / BLOCK_D, B, S, N) each, and sums
them here (no atomics, so the sums do not depend on the order the programs ran in): 400 MB each, for the moment
of the sum, at Mamba 125M's layer with B 16, S 2048 (DI 1536 in blocks of 8, N 16).
"""

from dataclasses import dataclass

import torch

from kernels.selective_scan.triton.backward import launch_backward
from kernels.selective_scan.triton.forward import launch_forward


@dataclass(frozen=True)
class Tiling:
    """Tiles of CHUNK steps x BLOCK_D channels x all N states (powers of two) and warps per program, per kernel;
    one CHUNK for both, since the backward starts from the states the forward wrote per chunk."""

    chunk: int
    forward_block_d: int
    forward_warps: int
    backward_block_d: int
    backward_warps: int

    def num_chunks(self, seq_len: int) -> int:
        return -(-seq_len // self.chunk)


# N padded to a power of two -> (CHUNK, float32 values of a (CHUNK, BLOCK_D, N) tile per thread); other N: (8, 8)
TILES = {16: (16, 16)}
FORWARD_WARPS, BACKWARD_WARPS = 8, 4


def choose_tiling(state_dim: int) -> Tiling:
    """The tiles of a call with ``state_dim`` N. A thread holds all CHUNK steps of its values, and every (CHUNK,
    BLOCK_D) tile (x, dt, their gradients) as many values as a (CHUNK, BLOCK_D, N) one, so the registers grow with
    CHUNK. Compiled offline (tests/kernels/test_selective_scan_triton.py; Triton 3.9, sm_90a, bfloat16 inputs), none
    spilling: at N 16, CHUNK 16 and 16 values a thread, the forward takes 72 to 76 registers a thread (3 programs of
    8 warps an SM) and the backward 168 (3 programs of 4 warps; 230 on sm_80 with float32 inputs), where 32 values
    a thread take 128 and 255 (the backward spilling); at N 4, 8, 32, 64 the same tiles take up to 255 in the
    backward, CHUNK 8 and 8 values a thread 75 to 95 and 136 to 168."""
    block_n = 1 << (state_dim - 1).bit_length()
    chunk, values_per_thread = TILES.get(block_n, (8, 8))

    def block_d(warps: int) -> int:
        return max(1, values_per_thread * 32 * warps // (chunk * block_n))

    return Tiling(chunk, block_d(FORWARD_WARPS), FORWARD_WARPS, block_d(BACKWARD_WARPS), BACKWARD_WARPS)


def saves_chunk_starts(x: torch.Tensor, dt: torch.Tensor, state_dim: int, tiling: Tiling) -> bool:
    """Whether the forward keeps the states entering the chunks: at most the memory of x and dt."""
    return 4 * state_dim / tiling.chunk <= x.element_size() + dt.element_size()


class SelectiveScanTriton(torch.autograd.Function):
    """x, dt (B, S, DI) and B, C (B, S, N) any strides, A (DI, N), D (DI,) or None, initial state (B, DI, N) or None
    -> y (B, S, DI) in x's dtype and the final state (B, DI, N) in float32."""

    @staticmethod
    def forward(ctx, x, dt, A, B, C, D, initial_state, tiling: Tiling, save_chunk_starts: bool):
        batch, seq_len, inner_dim = x.shape
        state_dim = A.shape[1]
        A, D, initial_state = (None if t is None else t.contiguous() for t in (A, D, initial_state))
        y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
        final_state = torch.empty((batch, inner_dim, state_dim), dtype=torch.float32, device=x.device)
        chunk_starts = None
        if any(ctx.needs_input_grad[:7]) and save_chunk_starts:
            chunk_starts = torch.empty(
                (batch, tiling.num_chunks(seq_len), inner_dim, state_dim), dtype=torch.float32, device=x.device
            )
        launch_forward(
            x,
            dt,
            A,
            B,
            C,
            D,
            initial_state,
            y,
            final_state,
            chunk_starts,
            chunk=tiling.chunk,
            block_d=tiling.forward_block_d,
            num_warps=tiling.forward_warps,
        )
        ctx.save_for_backward(x, dt, A, B, C, D, initial_state, chunk_starts)
        ctx.tiling = tiling
        ctx.set_materialize_grads(False)  # an output the loss does not use gets no gradient tensor, not zeros
        return y, final_state

    @staticmethod
    def backward(ctx, grad_y, grad_final_state):
        x, dt, A, B, C, D, initial_state, chunk_starts = ctx.saved_tensors
        tiling = ctx.tiling
        batch, seq_len, inner_dim = x.shape
        state_dim = A.shape[1]
        float32 = dict(dtype=torch.float32, device=x.device)
        if chunk_starts is None:  # the forward kept nothing: run it again for the states entering the chunks
            chunk_starts = torch.empty((batch, tiling.num_chunks(seq_len), inner_dim, state_dim), **float32)
            final_state = torch.empty((batch, inner_dim, state_dim), **float32)
            launch_forward(
                x,
                dt,
                A,
                B,
                C,
                D,
                initial_state,
                None,
                final_state,
                chunk_starts,
                chunk=tiling.chunk,
                block_d=tiling.forward_block_d,
                num_warps=tiling.forward_warps,
            )
        if grad_y is None:
            grad_y = torch.zeros(1, **float32).expand(x.shape)  # strides 0: no memory
        if grad_final_state is not None:
            grad_final_state = grad_final_state.float().contiguous()
        dim_blocks = -(-inner_dim // tiling.backward_block_d)
        grad_x = torch.empty(x.shape, dtype=x.dtype, device=x.device)
        grad_dt = torch.empty(dt.shape, dtype=dt.dtype, device=x.device)
        grad_A_rows = torch.empty((batch, inner_dim, state_dim), **float32)
        grad_B_blocks = torch.empty((dim_blocks, batch, seq_len, state_dim), **float32)
        grad_C_blocks = torch.empty((dim_blocks, batch, seq_len, state_dim), **float32)
        grad_D_rows = torch.empty((batch, inner_dim), **float32) if D is not None else None
        grad_initial_state = (
            torch.empty((batch, inner_dim, state_dim), **float32) if initial_state is not None else None
        )
        launch_backward(
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
            chunk=tiling.chunk,
            block_d=tiling.backward_block_d,
            num_warps=tiling.backward_warps,
        )
        grad_D = grad_D_rows.sum(0).to(D.dtype) if D is not None else None
        if grad_initial_state is not None:
            grad_initial_state = grad_initial_state.to(initial_state.dtype)
        return (
            grad_x,
            grad_dt,
            grad_A_rows.sum(0).to(A.dtype),
            grad_B_blocks.sum(0).to(B.dtype),
            grad_C_blocks.sum(0).to(C.dtype),
            grad_D,
            grad_initial_state,
            None,
            None,
        )
