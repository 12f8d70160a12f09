"""Forward Triton kernel of the sLSTM scan: all S steps in one launch, one program per (batch tile, head).

Each step computes the pre-activations of the four gates, ``wx_t + b + h_{t-1} R``, in tiles of BLOCK_D output dims
(columns of R) and BLOCK_D input dims (rows of R): h_{t-1} is read back, in the matmul dtype, from the h buffer the
previous step wrote (one ``tl.debug_barrier`` per step makes a step's writes visible to all threads of the program),
the tiles of R are read from global memory (L2) every step, and the state c, n, m of a tile of output dims is read
from and written to the buffers of all steps, which the backward needs anyway. Any head dim works: tiles are masked.
Offsets move from step to step by addition (int64 rows), so no product of a step index overflows 32 bits.
"""

import triton
import triton.language as tl

from kernels.slstm.triton.gate_math import log_forget, tanh


@triton.jit
def matmul(a, b, accumulator, DOT_PRECISION: tl.constexpr, UPCAST: tl.constexpr):
    """accumulator + a b in float32. UPCAST (set under the interpreter): the operands in float32 first, since
    Triton 3.9's interpreter multiplies bfloat16 operands as raw integers; bfloat16 products are exact in float32,
    so the value is a compiled kernel's up to the order of summation."""
    if UPCAST:
        return tl.dot(a.to(tl.float32), b.to(tl.float32), accumulator, input_precision="ieee")
    else:
        return tl.dot(a, b, accumulator, input_precision=DOT_PRECISION)


@triton.jit
def _forward_kernel(
    wx,
    stride_wx_batch,
    stride_wx_time,
    stride_wx_gate,
    stride_wx_head,
    stride_wx_dim,  # (B, S, 4, NH, DH)
    bias,  # (4, NH, DH) float32, contiguous
    R,
    stride_r_gate,
    stride_r_head,
    stride_r_in,
    stride_r_out,  # (4, NH, DH_in, DH_out) in the matmul dtype
    H,
    C,
    N,
    M,  # (B, S + 1, NH, DH) contiguous, index 0 the initial state: H in the matmul dtype, C, N, M float32
    preactivations,  # (B, S, 4, NH, DH) float32, contiguous (written if STORE_PREACTIVATIONS)
    batch,
    seq_len,
    num_heads,
    head_dim,
    FORGET_EXP: tl.constexpr,
    STORE_PREACTIVATIONS: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
    UPCAST: tl.constexpr,
    BLOCK_B: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    head = tl.program_id(1)
    rows = (tl.program_id(0) * BLOCK_B + tl.arange(0, BLOCK_B)).to(tl.int64)  # (BLOCK_B,)
    row_mask = rows < batch
    lanes = tl.arange(0, BLOCK_D)
    head_stride = num_heads * head_dim  # between steps of the state buffers, between gates of the others
    bias_head = bias + head * head_dim  # gate i; + g NH DH for gate g
    R_head = R + head * stride_r_head
    # offsets of (row, step t, head, dim 0), moved on after each step: (BLOCK_B,) each
    state_previous = (rows * (seq_len + 1) * num_heads + head) * head_dim  # into H, C, N, M at index t
    preactivation_row = (rows * seq_len * 4 * num_heads + head) * head_dim  # gate i
    wx_row = wx + rows * stride_wx_batch + head * stride_wx_head  # gate i
    for _ in range(seq_len):  # one time step per iteration
        state_current = state_previous + head_stride  # index t + 1
        for out_start in range(0, head_dim, BLOCK_D):
            out_dims = out_start + lanes  # (BLOCK_D,)
            out_mask = out_dims < head_dim
            mask = row_mask[:, None] & out_mask[None, :]  # (BLOCK_B, BLOCK_D)
            wx_tile = wx_row[:, None] + out_dims[None, :] * stride_wx_dim  # gate i
            i_tilde = (
                tl.load(wx_tile, mask=mask, other=0.0).to(tl.float32)
                + tl.load(bias_head + out_dims, mask=out_mask, other=0.0)[None, :]
            )  # (BLOCK_B, BLOCK_D)
            f_tilde = (
                tl.load(wx_tile + stride_wx_gate, mask=mask, other=0.0).to(tl.float32)
                + tl.load(bias_head + head_stride + out_dims, mask=out_mask, other=0.0)[None, :]
            )
            z_tilde = (
                tl.load(wx_tile + 2 * stride_wx_gate, mask=mask, other=0.0).to(tl.float32)
                + tl.load(bias_head + 2 * head_stride + out_dims, mask=out_mask, other=0.0)[None, :]
            )
            o_tilde = (
                tl.load(wx_tile + 3 * stride_wx_gate, mask=mask, other=0.0).to(tl.float32)
                + tl.load(bias_head + 3 * head_stride + out_dims, mask=out_mask, other=0.0)[None, :]
            )
            for in_start in range(0, head_dim, BLOCK_D):
                in_dims = in_start + lanes  # (BLOCK_D,)
                in_mask = in_dims < head_dim
                h_previous = tl.load(
                    H + state_previous[:, None] + in_dims[None, :], mask=row_mask[:, None] & in_mask[None, :], other=0.0
                )  # (BLOCK_B, BLOCK_D)
                R_tile = R_head + in_dims[:, None] * stride_r_in + out_dims[None, :] * stride_r_out  # gate i
                tile_mask = in_mask[:, None] & out_mask[None, :]  # (BLOCK_D in, BLOCK_D out)
                i_tilde = matmul(h_previous, tl.load(R_tile, mask=tile_mask, other=0.0), i_tilde, DOT_PRECISION, UPCAST)
                f_tilde = matmul(
                    h_previous,
                    tl.load(R_tile + stride_r_gate, mask=tile_mask, other=0.0),
                    f_tilde,
                    DOT_PRECISION,
                    UPCAST,
                )
                z_tilde = matmul(
                    h_previous,
                    tl.load(R_tile + 2 * stride_r_gate, mask=tile_mask, other=0.0),
                    z_tilde,
                    DOT_PRECISION,
                    UPCAST,
                )
                o_tilde = matmul(
                    h_previous,
                    tl.load(R_tile + 3 * stride_r_gate, mask=tile_mask, other=0.0),
                    o_tilde,
                    DOT_PRECISION,
                    UPCAST,
                )

            previous = state_previous[:, None] + out_dims[None, :]  # (BLOCK_B, BLOCK_D)
            c = tl.load(C + previous, mask=mask, other=0.0)
            n = tl.load(N + previous, mask=mask, other=1.0)
            m = tl.load(M + previous, mask=mask, other=0.0)
            log_f_plus_m = log_forget(f_tilde, FORGET_EXP) + m  # -inf where the cell has no history
            m = tl.maximum(log_f_plus_m, i_tilde)
            i_stable = tl.exp(i_tilde - m)
            f_stable = tl.exp(log_f_plus_m - m)
            c = f_stable * c + i_stable * tanh(z_tilde)
            n = f_stable * n + i_stable
            h = tl.sigmoid(o_tilde) * c / n

            current = state_current[:, None] + out_dims[None, :]  # (BLOCK_B, BLOCK_D)
            tl.store(H + current, h.to(H.dtype.element_ty), mask=mask)
            tl.store(C + current, c, mask=mask)
            tl.store(N + current, n, mask=mask)
            tl.store(M + current, m, mask=mask)
            if STORE_PREACTIVATIONS:
                gate_i = preactivation_row[:, None] + out_dims[None, :]  # (BLOCK_B, BLOCK_D)
                tl.store(preactivations + gate_i, i_tilde, mask=mask)
                tl.store(preactivations + gate_i + head_stride, f_tilde, mask=mask)
                tl.store(preactivations + gate_i + 2 * head_stride, z_tilde, mask=mask)
                tl.store(preactivations + gate_i + 3 * head_stride, o_tilde, mask=mask)
        state_previous = state_current
        preactivation_row += 4 * head_stride
        wx_row += stride_wx_time
        tl.debug_barrier()  # h_t is read back by every thread of the program in the next step


def launch_forward(
    wx, R, bias, H, C, N, M, preactivations, *, forget_exp: bool, block_b: int, block_d: int, num_warps: int
) -> None:
    """Run the scan: fills H, C, N, M (B, S + 1, NH, DH) from index 1 on (index 0 holds the initial state) and, if
    ``preactivations`` is a tensor, the pre-activations (B, S, 4, NH, DH)."""
    batch, seq_len, _, num_heads, head_dim = wx.shape
    store = preactivations is not None
    grid = (triton.cdiv(batch, block_b), num_heads)
    _forward_kernel[grid](
        wx,
        *wx.stride(),
        bias,
        R,
        *R.stride(),
        H,
        C,
        N,
        M,
        preactivations if store else C,
        batch,
        seq_len,
        num_heads,
        head_dim,
        FORGET_EXP=forget_exp,
        STORE_PREACTIVATIONS=store,
        DOT_PRECISION=dot_precision(R),
        UPCAST=interpreted(_forward_kernel),
        BLOCK_B=block_b,
        BLOCK_D=block_d,
        num_warps=num_warps,
    )


def interpreted(kernel) -> bool:
    """Whether ``kernel`` runs under Triton's interpreter (``TRITON_INTERPRET=1`` when it was decorated)."""
    return not isinstance(kernel, triton.runtime.JITFunction)


def dot_precision(R) -> str:
    """float32 matmuls in full precision ("ieee"), as torch's reference computes them; "tf32", Triton's default,
    applies to float32 operands only, so half types are unaffected by it."""
    return "ieee" if R.element_size() == 4 else "tf32"
