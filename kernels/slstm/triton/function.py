"""The sLSTM scan on the Triton kernels as one autograd node: buffers, tile sizes, and the gradients of R and b.

Dtypes: the recurrent matmuls (h_{t-1} R forward, dpre R^T backward) take their operands in the matmul dtype, that of
``R_matmul`` (the caller's choice: wx's dtype, or the autocast dtype), accumulating in float32; gate math, the states
c, n, m and the carried gradients dc, dn are float32 throughout. h of every step is written in the matmul dtype (it
is the next step's matmul operand), the pre-activations in float32. The gradient of R is one matmul over all steps
and batch rows in the matmul dtype (float32 accumulation), as autocast's backward of the reference computes it.
"""

import torch

from kernels.slstm.triton.backward import launch_backward
from kernels.slstm.triton.forward import launch_forward

BLOCK_B = 16  # batch rows per program: tl.dot's smallest tile
# head dims per tile of R (rows and columns), by matmul dtype; the head dim is covered by as many tiles as it takes.
# Compiled offline for sm_90a and sm_80 (Triton 3.6 and 3.9, 16-aligned shapes): 8 warps and these tiles keep the
# pipelined loads of R in 70-80 KB (half types) / 37-49 KB (float32) of shared memory and within 255 registers
# without spilling (Triton 3.6 spills 16 bytes in the forward); 4 warps or 64-wide float32 tiles spill.
MAX_BLOCK_D = {torch.float32: 32, torch.bfloat16: 64, torch.float16: 64}
NUM_WARPS = 8


def tile_sizes(head_dim: int, matmul_dtype: torch.dtype) -> dict[str, int]:
    """Launch sizes: tiles of R are BLOCK_D x BLOCK_D, BLOCK_D a power of two from 16 (tl.dot's smallest) up."""
    block_d = min(MAX_BLOCK_D[matmul_dtype], max(16, 1 << (head_dim - 1).bit_length()))
    return dict(block_b=BLOCK_B, block_d=block_d, num_warps=NUM_WARPS)


class TritonSLSTMScan(torch.autograd.Function):
    """wx (B, S, 4, NH, DH) any strides, R_matmul (4, NH, DH, DH) in the matmul dtype, b (4, NH, DH), initial
    h, c, n (B, NH, DH), m (B, NH, DH; detached, -inf where n == 0) -> h of every step (B, S, NH, DH) in the matmul
    dtype and the final h, c, n, m (B, NH, DH) in float32."""

    @staticmethod
    def forward(ctx, wx, R_matmul, b, h0, c0, n0, m0, forget_gate: str, recurrent_grad_clip: float | None):
        batch, seq_len, _, num_heads, head_dim = wx.shape
        states = (batch, seq_len + 1, num_heads, head_dim)  # index 0 the initial state, t + 1 the state after step t
        H = wx.new_empty(states, dtype=R_matmul.dtype)
        C, N, M = (wx.new_empty(states, dtype=torch.float32) for _ in range(3))
        H[:, 0], C[:, 0], N[:, 0], M[:, 0] = h0, c0, n0, m0
        needs_gradients = any(ctx.needs_input_grad[:6])
        preactivations = (
            wx.new_empty((batch, seq_len, 4, num_heads, head_dim), dtype=torch.float32) if needs_gradients else None
        )
        launch_forward(
            wx,
            R_matmul,
            b.float().contiguous(),
            H,
            C,
            N,
            M,
            preactivations,
            forget_exp=forget_gate == "exp",
            **tile_sizes(head_dim, R_matmul.dtype),
        )
        if needs_gradients:
            ctx.save_for_backward(R_matmul, H, C, N, M, preactivations)
        ctx.forget_gate, ctx.recurrent_grad_clip = forget_gate, recurrent_grad_clip
        ctx.input_dtypes = (wx.dtype, b.dtype, h0.dtype, c0.dtype, n0.dtype)
        m_last = M[:, seq_len].clone()
        ctx.mark_non_differentiable(m_last)
        h_last = H[:, seq_len].to(torch.float32, copy=True)
        return H[:, 1:], h_last, C[:, seq_len].clone(), N[:, seq_len].clone(), m_last

    @staticmethod
    def backward(ctx, grad_h_all, grad_h_last, grad_c_last, grad_n_last, _grad_m_last):
        R_matmul, H, C, N, M, preactivations = ctx.saved_tensors
        batch, seq_len, _, num_heads, head_dim = preactivations.shape
        wx_dtype, b_dtype, h0_dtype, c0_dtype, n0_dtype = ctx.input_dtypes
        final_shape = (batch, num_heads, head_dim)

        def final_gradient(grad):  # (B, NH, DH) float32, contiguous
            return C.new_zeros(final_shape) if grad is None else grad.float().contiguous()

        if grad_h_all is None:
            grad_h_all = C.new_zeros(1).expand(batch, seq_len, num_heads, head_dim)  # strides 0: no memory
        grad_preactivations = torch.empty_like(preactivations, dtype=R_matmul.dtype)  # (B, S, 4, NH, DH)
        carries = C.new_empty((2, 2, *final_shape))  # (dc, dn) x (two slots) x (B, NH, DH)
        grad_h0 = C.new_empty(final_shape)
        launch_backward(
            grad_h_all,
            final_gradient(grad_h_last),
            final_gradient(grad_c_last),
            final_gradient(grad_n_last),
            R_matmul,
            C,
            N,
            M,
            preactivations,
            grad_preactivations,
            carries[0],
            carries[1],
            grad_h0,
            forget_exp=ctx.forget_gate == "exp",
            clip=ctx.recurrent_grad_clip,
            **tile_sizes(head_dim, R_matmul.dtype),
        )
        grad_c0, grad_n0 = carries[:, (seq_len - 1) % 2]  # (B, NH, DH) each

        grad_R = None
        if ctx.needs_input_grad[1]:
            with torch.autocast(preactivations.device.type, enabled=False):
                # dR[g, h] = sum over batch and steps of h_{t-1}^T dpre_t[g]: (4, NH, DH_in, DH_out)
                grad_R = torch.einsum("bshd,bsghe->ghde", H[:, :seq_len], grad_preactivations)
        grad_b = grad_preactivations.sum((0, 1), dtype=torch.float32).to(b_dtype)  # (4, NH, DH)
        return (
            grad_preactivations.to(wx_dtype),
            grad_R,
            grad_b,
            grad_h0.to(h0_dtype),
            grad_c0.to(c0_dtype),
            grad_n0.to(n0_dtype),
            None,
            None,
            None,
        )
