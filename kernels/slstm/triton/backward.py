"""Backward Triton kernel of the sLSTM scan: walks back through all S steps in one launch, one program per
(batch tile, head), as the forward does.

Per step t (the formulas are kernels/slstm/fused.py's) it forms the gradient reaching h_t,
``dh = dh_t(outside) + clip(dpre_{t+1} R^T)``, the second term from the pre-activation gradients of step t + 1 that the
previous iteration wrote (in the matmul dtype; one ``tl.debug_barrier`` per step), then the four pre-activation
gradients of step t from the saved pre-activations and states (float32), and carries dc, dn to step t - 1 through a
two-slot float32 buffer. The gradient of R (one matmul over all steps) and of b (a sum) are left to the caller; the
gradient of the initial h, ``clip(dpre_0 R^T)``, is written after the loop.
"""

import triton
import triton.language as tl

from kernels.slstm.triton.forward import dot_precision, interpreted, matmul
from kernels.slstm.triton.gate_math import dlog_forget, log_forget, tanh


@triton.jit
def recurrent_gradient(
    grad_preactivations,
    preactivation_row,
    row_mask,
    R_head,
    stride_r_gate,
    stride_r_in,
    stride_r_out,
    out_dims,
    out_mask,
    clip,
    head_dim,
    head_stride,
    HAS_CLIP: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
    UPCAST: tl.constexpr,
    BLOCK_B: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    """The gradient reaching h_{t-1} from step t, the sum over gates g of dpre_t[g] R[g]^T (clipped if HAS_CLIP),
    for the dims ``out_dims`` of h_{t-1}: (BLOCK_B, BLOCK_D). ``preactivation_row`` (BLOCK_B,): offsets of step t,
    gate i, dim 0 into grad_preactivations (B, S, 4, NH, DH)."""
    lanes = tl.arange(0, BLOCK_D)
    total = tl.zeros((BLOCK_B, BLOCK_D), dtype=tl.float32)
    for k_start in range(0, head_dim, BLOCK_D):
        k_dims = k_start + lanes  # (BLOCK_D,) output dims of R, summed over
        k_mask = k_dims < head_dim
        gate_i = grad_preactivations + preactivation_row[:, None] + k_dims[None, :]  # (BLOCK_B, BLOCK_D)
        mask = row_mask[:, None] & k_mask[None, :]
        R_transposed = R_head + k_dims[:, None] * stride_r_out + out_dims[None, :] * stride_r_in  # gate i, (k, out)
        tile_mask = k_mask[:, None] & out_mask[None, :]
        total = matmul(
            tl.load(gate_i, mask=mask, other=0.0),
            tl.load(R_transposed, mask=tile_mask, other=0.0),
            total,
            DOT_PRECISION,
            UPCAST,
        )
        total = matmul(
            tl.load(gate_i + head_stride, mask=mask, other=0.0),
            tl.load(R_transposed + stride_r_gate, mask=tile_mask, other=0.0),
            total,
            DOT_PRECISION,
            UPCAST,
        )
        total = matmul(
            tl.load(gate_i + 2 * head_stride, mask=mask, other=0.0),
            tl.load(R_transposed + 2 * stride_r_gate, mask=tile_mask, other=0.0),
            total,
            DOT_PRECISION,
            UPCAST,
        )
        total = matmul(
            tl.load(gate_i + 3 * head_stride, mask=mask, other=0.0),
            tl.load(R_transposed + 3 * stride_r_gate, mask=tile_mask, other=0.0),
            total,
            DOT_PRECISION,
            UPCAST,
        )
    if HAS_CLIP:
        total = tl.minimum(tl.maximum(total, -clip), clip)
    return total


@triton.jit
def _backward_kernel(
    grad_h,
    stride_gh_batch,
    stride_gh_time,
    stride_gh_head,
    stride_gh_dim,  # (B, S, NH, DH) gradient of every h_t
    grad_h_last,
    grad_c_last,
    grad_n_last,  # (B, NH, DH) float32, contiguous: gradients of the final state
    R,
    stride_r_gate,
    stride_r_head,
    stride_r_in,
    stride_r_out,  # (4, NH, DH_in, DH_out) in the matmul dtype
    C,
    N,
    M,  # (B, S + 1, NH, DH) float32, contiguous: the forward's states, index 0 the initial state
    preactivations,  # (B, S, 4, NH, DH) float32, contiguous
    grad_preactivations,  # (B, S, 4, NH, DH) in the matmul dtype, contiguous: written
    grad_c_carry,
    grad_n_carry,  # (2, B, NH, DH) float32, contiguous: dc, dn between steps; slot (S - 1) % 2 at the end
    grad_h_initial,  # (B, NH, DH) float32, contiguous: written
    clip,
    batch,
    seq_len,
    num_heads,
    head_dim,
    FORGET_EXP: tl.constexpr,
    HAS_CLIP: tl.constexpr,
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
    carry_slot_stride = batch * head_stride
    R_head = R + head * stride_r_head
    last = tl.cast(seq_len - 1, tl.int64)  # (a scalar argument equal to 1 arrives as a constexpr: no .to)
    # offsets of (row, step t, head, dim 0), moved back after each step, starting at t = S - 1: (BLOCK_B,) each
    final = (rows * num_heads + head) * head_dim  # into (B, NH, DH)
    state_current = final + (rows * seq_len + last + 1) * head_stride  # into C, N, M at index t + 1
    preactivation_row = ((rows * seq_len + last) * 4 * num_heads + head) * head_dim  # gate i
    grad_h_row = grad_h + rows * stride_gh_batch + last * stride_gh_time + head * stride_gh_head
    for step in range(seq_len):
        state_previous = state_current - head_stride  # index t
        carry_in = ((step + 1) % 2) * carry_slot_stride + final  # dc, dn from step t + 1 (unused at t = S - 1)
        carry_out = (step % 2) * carry_slot_stride + final
        for out_start in range(0, head_dim, BLOCK_D):
            out_dims = out_start + lanes  # (BLOCK_D,)
            out_mask = out_dims < head_dim
            mask = row_mask[:, None] & out_mask[None, :]  # (BLOCK_B, BLOCK_D)
            last_step = mask & (step == 0)
            later_step = mask & (step > 0)
            dh = tl.load(grad_h_row[:, None] + out_dims[None, :] * stride_gh_dim, mask=mask, other=0.0).to(tl.float32)
            dh += tl.load(grad_h_last + final[:, None] + out_dims[None, :], mask=last_step, other=0.0)
            if step > 0:
                dh += recurrent_gradient(
                    grad_preactivations,
                    preactivation_row + 4 * head_stride,
                    row_mask,
                    R_head,
                    stride_r_gate,
                    stride_r_in,
                    stride_r_out,
                    out_dims,
                    out_mask,
                    clip,
                    head_dim,
                    head_stride,
                    HAS_CLIP,
                    DOT_PRECISION,
                    UPCAST,
                    BLOCK_B,
                    BLOCK_D,
                )
            dc = tl.load(grad_c_carry + carry_in[:, None] + out_dims[None, :], mask=later_step, other=0.0) + tl.load(
                grad_c_last + final[:, None] + out_dims[None, :], mask=last_step, other=0.0
            )
            dn = tl.load(grad_n_carry + carry_in[:, None] + out_dims[None, :], mask=later_step, other=0.0) + tl.load(
                grad_n_last + final[:, None] + out_dims[None, :], mask=last_step, other=0.0
            )

            gate_i = preactivation_row[:, None] + out_dims[None, :]  # (BLOCK_B, BLOCK_D)
            i_tilde = tl.load(preactivations + gate_i, mask=mask, other=0.0)
            f_tilde = tl.load(preactivations + gate_i + head_stride, mask=mask, other=0.0)
            z_tilde = tl.load(preactivations + gate_i + 2 * head_stride, mask=mask, other=0.0)
            o_tilde = tl.load(preactivations + gate_i + 3 * head_stride, mask=mask, other=0.0)
            current = state_current[:, None] + out_dims[None, :]
            previous = state_previous[:, None] + out_dims[None, :]
            c = tl.load(C + current, mask=mask, other=0.0)
            inverse_n = 1.0 / tl.load(N + current, mask=mask, other=1.0)
            m = tl.load(M + current, mask=mask, other=0.0)
            c_previous = tl.load(C + previous, mask=mask, other=0.0)
            n_previous = tl.load(N + previous, mask=mask, other=0.0)
            m_previous = tl.load(M + previous, mask=mask, other=0.0)

            i_stable = tl.exp(i_tilde - m)
            f_stable = tl.exp(log_forget(f_tilde, FORGET_EXP) + m_previous - m)  # 0 where there was no history
            z = tanh(z_tilde)
            o = tl.sigmoid(o_tilde)
            c_over_n = c * inverse_n
            dc += dh * o * inverse_n
            dn -= dh * o * c_over_n * inverse_n  # h_t = o c_t / n_t
            grad_i = (dc * z + dn) * i_stable
            grad_f = (dc * c_previous + dn * n_previous) * f_stable * dlog_forget(f_tilde, FORGET_EXP)
            grad_z = dc * i_stable * (1.0 - z * z)
            grad_o = dh * c_over_n * o * (1.0 - o)
            dtype = grad_preactivations.dtype.element_ty
            tl.store(grad_preactivations + gate_i, grad_i.to(dtype), mask=mask)
            tl.store(grad_preactivations + gate_i + head_stride, grad_f.to(dtype), mask=mask)
            tl.store(grad_preactivations + gate_i + 2 * head_stride, grad_z.to(dtype), mask=mask)
            tl.store(grad_preactivations + gate_i + 3 * head_stride, grad_o.to(dtype), mask=mask)
            tl.store(grad_c_carry + carry_out[:, None] + out_dims[None, :], dc * f_stable, mask=mask)
            tl.store(grad_n_carry + carry_out[:, None] + out_dims[None, :], dn * f_stable, mask=mask)
        state_current = state_previous
        preactivation_row -= 4 * head_stride
        grad_h_row -= stride_gh_time
        tl.debug_barrier()  # dpre_t is read back by every thread of the program in the next step

    first_step = preactivation_row + 4 * head_stride  # t = 0
    for out_start in range(0, head_dim, BLOCK_D):
        out_dims = out_start + lanes
        out_mask = out_dims < head_dim
        dh_initial = recurrent_gradient(
            grad_preactivations,
            first_step,
            row_mask,
            R_head,
            stride_r_gate,
            stride_r_in,
            stride_r_out,
            out_dims,
            out_mask,
            clip,
            head_dim,
            head_stride,
            HAS_CLIP,
            DOT_PRECISION,
            UPCAST,
            BLOCK_B,
            BLOCK_D,
        )
        tl.store(
            grad_h_initial + final[:, None] + out_dims[None, :], dh_initial, mask=row_mask[:, None] & out_mask[None, :]
        )


def launch_backward(
    grad_h,
    grad_h_last,
    grad_c_last,
    grad_n_last,
    R,
    C,
    N,
    M,
    preactivations,
    grad_preactivations,
    grad_c_carry,
    grad_n_carry,
    grad_h_initial,
    *,
    forget_exp: bool,
    clip: float | None,
    block_b: int,
    block_d: int,
    num_warps: int,
) -> None:
    """Fill grad_preactivations (B, S, 4, NH, DH), grad_h_initial (B, NH, DH) and, in slot (S - 1) % 2 of the
    carries (2, B, NH, DH), the gradients of the initial c and n."""
    batch, seq_len, _, num_heads, head_dim = preactivations.shape
    grid = (triton.cdiv(batch, block_b), num_heads)
    _backward_kernel[grid](
        grad_h,
        *grad_h.stride(),
        grad_h_last,
        grad_c_last,
        grad_n_last,
        R,
        *R.stride(),
        C,
        N,
        M,
        preactivations,
        grad_preactivations,
        grad_c_carry,
        grad_n_carry,
        grad_h_initial,
        0.0 if clip is None else float(clip),
        batch,
        seq_len,
        num_heads,
        head_dim,
        FORGET_EXP=forget_exp,
        HAS_CLIP=clip is not None,
        DOT_PRECISION=dot_precision(R),
        UPCAST=interpreted(_backward_kernel),
        BLOCK_B=block_b,
        BLOCK_D=block_d,
        num_warps=num_warps,
    )
