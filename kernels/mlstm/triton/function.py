"""The chunkwise mLSTM on our Triton kernels as one autograd Function: launches, buffers and what the backward
keeps (imports triton; ``adapter`` imports this module only when the backend runs).

Forward (4 launches): the gate vectors of every chunk, the states entering every chunk (a recurrence across
chunks), the gated scores c~ with the normaliser, and the outputs. Backward (7 launches): the normaliser's
gradient, the gradients of the states leaving every chunk (the recurrence run backwards), the score gradients
dS, then dq, dk, dv and the gate gradients. The backward reuses what the forward wrote (states, c~, the
denominators) and recomputes nothing, but for the states entering the chunks (B * NH, NC + 1, DHK, DHV) in
float32 where keeping them would cost much memory (``save_states``, chosen in ``adapter``); its L x L matrices
are the c~ and dS tiles, (B * NH, NC, L, L) in the input dtype.

Inputs may be strided views (e.g. (B, S, NH, DH) transposed to (B, NH, S, DH)): the kernels take strides,
and h, dq, dk, dv are allocated with the inputs' layout.
"""

import math

import torch
from triton.runtime.jit import JITFunction

from kernels.mlstm.triton.backward_kernels import (
    key_gradients_kernel,
    normaliser_gradients_kernel,
    query_gradients_kernel,
    score_gradients_kernel,
    value_gradients_kernel,
)
from kernels.mlstm.triton.forward_kernels import gated_scores_kernel, outputs_kernel
from kernels.mlstm.triton.gate_kernels import chunk_gates_kernel, gate_gradients_kernel
from kernels.mlstm.triton.state_kernels import chunk_states_kernel, state_gradients_kernel
from kernels.mlstm.triton.tiling import Tiling

NUM_WARPS = 8  # 64 x 64 tiles: with 4 warps several kernels spill registers (ptxas for sm_90, Triton 3.6 and 3.9)
INTERPRETED = not isinstance(chunk_gates_kernel, JITFunction)  # decorated under TRITON_INTERPRET=1


def dot_precision(dtype: torch.dtype) -> str:
    """tl.dot's input precision (``tile_math.matmul``): float32 follows torch's matmul setting (full float32 by
    default), as the torch reference's matmuls do; half-precision inputs multiply exactly with float32 sums either
    way, on the GPU in their own dtype, under the interpreter in float32."""
    if INTERPRETED and dtype != torch.float32:
        return "upcast"
    if dtype == torch.float32 and torch.get_float32_matmul_precision() == "highest":
        return "ieee"
    return "tf32"


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def chunk_states(k, v, b, u, u_max, C0, n0, m_start, NH: int, tiling: Tiling):
    """C (BH, NC + 1, DHK, DHV), n (BH, NC + 1, DHK), m (BH, NC + 1) entering every chunk and after the last,
    float32, from the gate vectors (BH, NC * L) and the initial state (C0, n0 or None; m_start (BH,))."""
    BH, DHK, DHV, L = m_start.shape[0], k.shape[-1], v.shape[-1], tiling.chunk
    NC = u.shape[1] // L
    vector = dict(device=k.device, dtype=torch.float32)
    C_states = torch.empty(BH, NC + 1, DHK, DHV, **vector)
    n_states = torch.empty(BH, NC + 1, DHK, **vector)
    m_states = torch.empty(BH, NC + 1, **vector)
    has_initial_state = C0 is not None
    if has_initial_state:
        initial, initial_strides = (C0, n0), (*C0.stride(), *n0.stride())
    else:
        initial, initial_strides = (m_start, m_start), (0,) * 7  # not read
    state_grid = (BH, _cdiv(DHK, tiling.state_key_block), _cdiv(DHV, tiling.state_value_block))
    chunk_states_kernel[state_grid](
        k,
        v,
        u,
        u_max,
        b,
        *initial,
        m_start,
        C_states,
        n_states,
        m_states,
        k.shape[2],
        NC,
        NH,
        1.0 / math.sqrt(DHK),
        *k.stride(),
        *v.stride(),
        *initial_strides,
        DHK=DHK,
        DHV=DHV,
        L=L,
        BL=tiling.state_step_block,
        BK=tiling.state_key_block,
        BV=tiling.state_value_block,
        HAS_INITIAL_STATE=has_initial_state,
        PRECISION=dot_precision(k.dtype),
        num_warps=NUM_WARPS,
    )
    return C_states, n_states, m_states


class ChunkwiseMLSTMTriton(torch.autograd.Function):
    """h (B, NH, S, DHV) in q's dtype and the final C, n (float32, with gradient) and m (float32, without).

    q, k (B, NH, S, DHK), v (B, NH, S, DHV) of one dtype, k unscaled; i, f (B, NH, S) gate pre-activations;
    C0, n0, m0 the initial state or None (m0 without gradient); ``exp_forget_gate``: log f = f, else logsigmoid(f);
    ``save_states``: keep the states entering the chunks for the backward, else run their recurrence again there.
    """

    @staticmethod
    def forward(ctx, q, k, v, i, f, C0, n0, m0, exp_forget_gate: bool, eps: float, tiling: Tiling, save_states: bool):
        B, NH, S, DHK = q.shape
        DHV = v.shape[-1]
        BH, L = B * NH, tiling.chunk
        NC = _cdiv(S, L)
        scale = 1.0 / math.sqrt(DHK)
        precision = dot_precision(q.dtype)
        vector = dict(device=q.device, dtype=torch.float32)
        b, u, u_max = (torch.empty(BH, NC * L, **vector) for _ in range(3))
        chunk_gates_kernel[(NC * BH,)](
            f,
            i,
            b,
            u,
            u_max,
            S,
            NC,
            NH,
            *f.stride(),
            *i.stride(),
            L=L,
            EXP_FORGET_GATE=exp_forget_gate,
            num_warps=NUM_WARPS,
        )

        has_initial_state = C0 is not None
        if has_initial_state:
            m_start = m0.detach().to(torch.float32).reshape(BH).contiguous()  # (BH,)
        else:
            m_start = torch.full((BH,), float("-inf"), **vector)
        C_states, n_states, m_states = chunk_states(k, v, b, u, u_max, C0, n0, m_start, NH, tiling)

        scores = torch.empty(BH, NC, L, L, device=q.device, dtype=q.dtype)
        den, slope = torch.empty(BH, NC * L, **vector), torch.empty(BH, NC * L, **vector)
        row_blocks = L // tiling.step_block
        gated_scores_kernel[(NC * BH, row_blocks)](
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
            S,
            NC,
            NH,
            scale,
            eps,
            *q.stride(),
            *k.stride(),
            DHK=DHK,
            L=L,
            BL=tiling.step_block,
            BK=tiling.key_block,
            PRECISION=precision,
            num_warps=NUM_WARPS,
        )
        h = torch.empty_like(v)  # (B, NH, S, DHV) in v's layout
        outputs_kernel[(NC * BH, row_blocks, _cdiv(DHV, tiling.value_block))](
            q,
            v,
            u_max,
            scores,
            den,
            C_states,
            m_states,
            h,
            S,
            NC,
            NH,
            *q.stride(),
            *v.stride(),
            *h.stride(),
            DHK=DHK,
            DHV=DHV,
            L=L,
            BL=tiling.step_block,
            BK=tiling.key_block,
            BV=tiling.value_block,
            PRECISION=precision,
            num_warps=NUM_WARPS,
        )

        m_final = m_states[:, NC].reshape(B, NH).clone()
        ctx.mark_non_differentiable(m_final)
        C_final = C_states[:, NC].reshape(B, NH, DHK, DHV).clone()  # (B, NH, DHK, DHV)
        n_final = n_states[:, NC].reshape(B, NH, DHK).clone()  # (B, NH, DHK)
        if not save_states:
            C_states = n_states = None  # the backward runs chunk_states again
        ctx.save_for_backward(
            q, k, v, f, h, b, u, u_max, den, slope, scores, C_states, n_states, m_states, C0, n0, m_start
        )
        ctx.i_layout = (i.dtype, i.shape)
        ctx.state_dtypes = (C0.dtype, n0.dtype) if has_initial_state else None
        ctx.has_initial_state, ctx.exp_forget_gate, ctx.tiling = has_initial_state, exp_forget_gate, tiling
        ctx.set_materialize_grads(False)
        return h, C_final, n_final, m_final

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, dh, dC_final, dn_final, _dm_final):
        q, k, v, f, h, b, u, u_max, den, slope, scores, C_states, n_states, m_states, C0, n0, m_start = (
            ctx.saved_tensors
        )
        tiling: Tiling = ctx.tiling
        if C_states is None:
            C_states, n_states, _ = chunk_states(k, v, b, u, u_max, C0, n0, m_start, q.shape[1], tiling)
        B, NH, S, DHK = q.shape
        DHV = v.shape[-1]
        BH, L, BL = B * NH, tiling.chunk, tiling.step_block
        NC = _cdiv(S, L)
        scale = 1.0 / math.sqrt(DHK)
        precision = dot_precision(q.dtype)
        vector = dict(device=q.device, dtype=torch.float32)
        if dh is None:
            dh = torch.zeros_like(h)
        row_blocks, key_blocks = L // BL, _cdiv(DHK, tiling.key_block)
        tile_grid = (NC * BH, row_blocks)
        sizes = dict(L=L, BL=BL, num_warps=NUM_WARPS)

        d_normaliser = torch.empty(BH, NC * L, **vector)
        normaliser_gradients_kernel[tile_grid](
            dh,
            h,
            den,
            slope,
            d_normaliser,
            S,
            NC,
            NH,
            *dh.stride(),
            *h.stride(),
            DHV=DHV,
            BV=tiling.value_block,
            **sizes,
        )

        dC_states = torch.empty(BH, NC + 1, DHK, DHV, **vector)
        dn_states = torch.empty(BH, NC + 1, DHK, **vector)
        state_grid = (BH, _cdiv(DHK, tiling.state_key_block), _cdiv(DHV, tiling.state_value_block))
        boundary = torch.empty(state_grid[1] * state_grid[2], BH, NC, **vector)
        has_C_gradient, has_n_gradient = dC_final is not None, dn_final is not None
        dC_final = dC_final if has_C_gradient else den  # any tensor: the kernel does not read it
        dn_final = dn_final if has_n_gradient else den
        state_gradients_kernel[state_grid](
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
            S,
            NC,
            NH,
            BH,
            *q.stride(),
            *dh.stride(),
            *_strides(dC_final, 4, has_C_gradient),
            *_strides(dn_final, 3, has_n_gradient),
            DHK=DHK,
            DHV=DHV,
            L=L,
            BL=tiling.state_step_block,
            BK=tiling.state_key_block,
            BV=tiling.state_value_block,
            HAS_FINAL_C_GRADIENT=has_C_gradient,
            HAS_FINAL_N_GRADIENT=has_n_gradient,
            PRECISION=precision,
            num_warps=NUM_WARPS,
        )

        score_gradients = torch.empty_like(scores)  # (BH, NC, L, L)
        score_gradients_kernel[tile_grid](
            dh,
            v,
            u,
            u_max,
            den,
            d_normaliser,
            m_states,
            score_gradients,
            S,
            NC,
            NH,
            scale,
            *dh.stride(),
            *v.stride(),
            DHV=DHV,
            BV=tiling.value_block,
            PRECISION=precision,
            **sizes,
        )

        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        q_dq, k_dk = torch.empty(key_blocks, BH, NC * L, **vector), torch.empty(key_blocks, BH, NC * L, **vector)
        blocks = dict(DHK=DHK, DHV=DHV, BK=tiling.key_block, BV=tiling.value_block, PRECISION=precision, **sizes)
        query_gradients_kernel[(*tile_grid, key_blocks)](
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
            S,
            NC,
            NH,
            BH,
            *q.stride(),
            *k.stride(),
            *dh.stride(),
            *dq.stride(),
            **blocks,
        )
        key_gradients_kernel[(*tile_grid, key_blocks)](
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
            S,
            NC,
            NH,
            BH,
            scale,
            *q.stride(),
            *k.stride(),
            *v.stride(),
            *dk.stride(),
            **blocks,
        )
        value_gradients_kernel[(*tile_grid, _cdiv(DHV, tiling.value_block))](
            k,
            dh,
            u,
            u_max,
            den,
            m_states,
            scores,
            dC_states,
            dv,
            S,
            NC,
            NH,
            scale,
            *k.stride(),
            *dh.stride(),
            *dv.stride(),
            **blocks,
        )

        i_dtype, i_shape = ctx.i_layout
        df = torch.empty_like(f)
        di = torch.empty(i_shape, dtype=i_dtype, device=q.device)
        gate_gradients_kernel[(NC * BH,)](
            f,
            q_dq,
            k_dk,
            boundary,
            df,
            di,
            S,
            NC,
            NH,
            BH,
            key_blocks,
            boundary.shape[0],
            *f.stride(),
            *df.stride(),
            *di.stride(),
            L=L,
            EXP_FORGET_GATE=ctx.exp_forget_gate,
            num_warps=NUM_WARPS,
        )

        dC0 = dn0 = None
        if ctx.has_initial_state:
            C_dtype, n_dtype = ctx.state_dtypes
            dC0 = dC_states[:, 0].reshape(B, NH, DHK, DHV).to(C_dtype)
            dn0 = dn_states[:, 0].reshape(B, NH, DHK).to(n_dtype)
        return dq, dk, dv, di, df, dC0, dn0, None, None, None, None, None


def _strides(x: torch.Tensor, count: int, present: bool) -> tuple[int, ...]:
    return x.stride() if present else (0,) * count
