"""Chunkwise mLSTM as one autograd Function with a hand-written, recomputing backward.

The math is that of ``chunkwise_gates`` (paper Appendix A in chunkwise form). The forward saves the
inputs, h, the states entering every chunk and per-step vectors; the backward
(``chunkwise_backward``) recomputes the L x L matrices. Gradients are exactly those of the autograd
reference ``kernels.mlstm.chunkwise.chunkwise_autograd``: the stabiliser m is a constant
(stop-gradient) everywhere, the normaliser max(|q.n|, exp(-m)) + eps is differentiated.

Speed on CPU comes from few passes over memory: the L x L matrices of a block of chunks live in
small reused workspaces (fresh large tensors cost page faults), gate weights are vectors computed
once, and every matmul runs batched over a block of chunks with its result accumulated in place.
"""

import math

import torch

from kernels.mlstm.chunking import C_part, blocks, join_state, merge_chunks, n_part, scan_states, split_into_chunks
from kernels.mlstm.chunkwise_backward import chunkwise_backward
from kernels.mlstm.chunkwise_gates import (
    ChunkGates,
    chunk_gates,
    gate_dtype,
    gate_matrix,
    gated_scores,
    normaliser_slope,
)
from kernels.mlstm.gates import MLSTMState

# Size of one L x L workspace: a block holds this many elements per matrix. Every op on a block is one parallel
# region, which on a busy CPU waits milliseconds for its threads whatever its size: 2**20 (4 MiB in float32) runs
# the 256 chunks of B 2, 4 heads, S 2048 at L 64 as one block, 0.56x -> 0.80x a same-size Llama's LM training step
# on the shared 2-core machine (2**18: four blocks), and costs nothing with one thread (benchmarks/lm_training.py).
BLOCK_ELEMENTS = 2**20


def block_size(L: int, DH: int) -> int:
    """Chunks per block, so that a block's (L, L) or (L, DH) matrices hold about BLOCK_ELEMENTS."""
    return max(1, BLOCK_ELEMENTS // (L * max(L, DH)))


def _own_contributions(k, v, end_weight, block: int) -> torch.Tensor:
    """Each chunk's own part of its end state, joined: [w * V | w]^T K = [C_own^T; n_own].

    Returned one slot late, as ``scan_states`` takes them: (N + 1, DH + 1, DH), chunk j's in slot j + 1.
    """
    N, L, DH = k.shape
    slots = k.new_empty(N + 1, DH + 1, DH)
    weighted_v = k.new_empty(min(block, N), L, DH + 1)  # workspace: [w * V | w]
    for b in blocks(N, block):
        wv = weighted_v[: b.stop - b.start]  # (n, L, DH + 1)
        torch.mul(v[b], end_weight[b].unsqueeze(2), out=wv[..., :DH])
        wv[..., DH] = end_weight[b]
        torch.bmm(wv.transpose(1, 2), k[b], out=slots[b.start + 1 : b.stop + 1])
    return slots


def _outputs(q, k, v, states, gates: ChunkGates, scale: float, eps: float, block: int):
    """h (N, L, DH), the normaliser and the denominator max(|nrm|, exp(-m)) + eps (N, L) of every chunk.

    states (N, DH + 1, DH): the joined states entering the chunks.
    """
    N, L, DH = q.shape
    h, normaliser = q.new_empty(N, L, DH), q.new_empty(N, L)
    denominator = torch.exp(-gates.row_stabiliser)  # (N, L) the floor exp(-m), made the denominator below
    gate_workspace, c_tilde_workspace = (q.new_empty(min(block, N), L, L) for _ in range(2))
    for b in blocks(N, block):
        size = b.stop - b.start
        D = gate_matrix(gates, b, out=gate_workspace[:size])  # (n, L, L)
        c_tilde = gated_scores(q[b], k[b], D, scale, out=c_tilde_workspace[:size])  # (n, L, L)
        a = gates.start_weight[b]  # (n, L)
        numerator = torch.bmm(q[b], C_part(states[b]), out=h[b]).mul_(a.unsqueeze(2))  # (n, L, DH)
        numerator.baddbmm_(c_tilde, v[b])
        torch.bmm(q[b], n_part(states[b]).unsqueeze(2), out=normaliser[b].unsqueeze(2))
        torch.addcmul(c_tilde.sum(-1), a, normaliser[b], out=normaliser[b])
        torch.maximum(normaliser[b].abs(), denominator[b], out=denominator[b]).add_(eps)
        numerator.div_(denominator[b].unsqueeze(2))
    return h, normaliser, denominator


class ChunkwiseMLSTM(torch.autograd.Function):
    """h, final C, n and m of the chunkwise mLSTM over padded, chunked inputs.

    q, k, v: (B, NH, NC, L, DH) with k unscaled; i, log_f_cum: (B, NH, NC, L) with log_f_cum summed
    within chunks, in the gate dtype (``chunkwise_gates.gate_dtype``); C0 (B, NH, DH, DH), n0 (B, NH, DH),
    m0 (B, NH) the start state (m0 without gradient); ``scale`` multiplies q.k.
    """

    @staticmethod
    def forward(ctx, q, k, v, i, log_f_cum, C0, n0, m0, scale: float, eps: float):
        B, NH, NC, L, DH = q.shape
        BH, N = B * NH, B * NH * NC
        gates, m_final = chunk_gates(i.reshape(BH, NC, L), log_f_cum.reshape(BH, NC, L), m0.reshape(BH), scale)
        q, k, v = (x.reshape(N, L, DH) for x in (q, k, v))
        block = block_size(L, DH)
        slots = _own_contributions(k, v, gates.end_weight, block)  # (N + 1, DH + 1, DH)
        decay = gates.decay.view(BH, NC)  # (BH, NC)
        final = scan_states(slots, decay, join_state(C0, n0).reshape(BH, DH + 1, DH))  # (BH, DH + 1, DH)
        states = slots[:N]  # (N, DH + 1, DH) entering the chunks
        h, normaliser, denominator = _outputs(q, k, v, states, gates, scale, eps, block)
        slope = normaliser_slope(normaliser, gates.row_stabiliser)  # (N, L)
        ctx.save_for_backward(q, k, v, states, h, denominator, slope, *gates)
        ctx.block, ctx.scale, ctx.gate_dtype = block, scale, log_f_cum.dtype
        m_final = m_final.reshape(B, NH)
        ctx.mark_non_differentiable(m_final)
        C_final = C_part(final).reshape(B, NH, DH, DH).contiguous()  # (B, NH, DH, DH)
        n_final = n_part(final).reshape(B, NH, DH).clone()  # (B, NH, DH)
        return h.view(B, NH, NC, L, DH), C_final, n_final, m_final

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, dh, dC_final, dn_final, _dm_final):
        q, k, v, states, h, denominator, slope, *gate_fields = ctx.saved_tensors
        gates = ChunkGates(*gate_fields)
        B, NH, NC, L, DH = dh.shape
        BH, N = B * NH, B * NH * NC
        d_final = join_state(dC_final, dn_final).reshape(BH, DH + 1, DH)
        dq, dk, dv, di, d_log_f_cum, d_start = chunkwise_backward(
            dh.reshape(N, L, DH), d_final, q, k, v, states, h, denominator, slope, gates, ctx.scale, ctx.block
        )
        chunked = (B, NH, NC, L)
        return (
            dq.view(*chunked, DH),
            dk.view(*chunked, DH),
            dv.view(*chunked, DH),
            di.view(chunked),
            d_log_f_cum.view(chunked).to(ctx.gate_dtype),
            C_part(d_start).reshape(B, NH, DH, DH),
            n_part(d_start).reshape(B, NH, DH),
            None,
            None,
            None,
        )


def chunkwise_fast(q, k, v, i, log_f, start: MLSTMState, *, return_state, eps, chunk_size):
    """mLSTM h~ (B, NH, S, DH) and the final state through ``ChunkwiseMLSTM``; ``log_f`` is the log forget gate.

    Under autocast the kernel runs in float32 with autocast off (its exponentials and sums need it).
    """
    if torch.is_autocast_enabled(q.device.type):
        with torch.autocast(q.device.type, enabled=False):
            q, k, v, i, log_f, *start = (_at_least_float32(x) for x in (q, k, v, i, log_f, *start))
            return chunkwise_fast(
                q, k, v, i, log_f, MLSTMState(*start), return_state=return_state, eps=eps, chunk_size=chunk_size
            )
    S, DH = q.shape[-2:]
    log_f = log_f.to(gate_dtype(q.device))  # (B, NH, S), summed within chunks below (see chunkwise_gates)
    chunks = split_into_chunks(q, k, v, i, log_f, chunk_size)  # q, k, v (B, NH, NC, L, DH); i, log_f_cum
    h, C, n, m = ChunkwiseMLSTM.apply(*chunks, start.C, start.n, start.m, 1 / math.sqrt(DH), eps)
    h = merge_chunks(h, S)  # (B, NH, S, DH)
    return (h, MLSTMState(C, n, m)) if return_state else h


def _at_least_float32(x: torch.Tensor) -> torch.Tensor:
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
