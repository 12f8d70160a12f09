"""Triton helpers shared by the mLSTM kernels: the tile matmul and the gate matrix of a tile."""

import triton
import triton.language as tl


@triton.jit
def matmul(a, b, PRECISION: tl.constexpr):
    """a @ b with float32 sums. PRECISION: tl.dot's input precision, or "upcast" to multiply in float32 (Triton's
    interpreter, the CPU tests, multiplies bfloat16 tiles as their integer bit patterns; in float32 the products of
    16-bit inputs are exact, as on the tensor cores)."""
    if PRECISION == "upcast":
        product = tl.dot(a.to(tl.float32), b.to(tl.float32), input_precision="ieee")
    else:
        product = tl.dot(a, b, input_precision=PRECISION)
    return product


@triton.jit
def gate_matrix(u, u_max, m, gates_chunk, rows, columns):
    """exp(u_s - M_t) for rows t and columns s of one chunk, 0 above the diagonal: (BL, BL) float32.

    u, u_max: the gate vectors (``gate_kernels``); m the stabiliser of the state entering the chunk;
    gates_chunk the chunk's offset in the gate vectors; rows, columns (BL,) steps within the chunk.
    """
    M = tl.maximum(tl.load(u_max + gates_chunk + rows), m)  # (BL,) row stabiliser offsets M_t
    u_columns = tl.load(u + gates_chunk + columns)  # (BL,)
    causal = columns[None, :] <= rows[:, None]  # (BL, BL)
    return tl.exp(tl.where(causal, u_columns[None, :] - M[:, None], float("-inf")))
