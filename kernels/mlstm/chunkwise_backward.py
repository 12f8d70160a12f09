"""Backward of the chunkwise mLSTM (``ChunkwiseMLSTM``): exact gradients, L x L matrices recomputed.

Per chunk (notation of ``chunkwise_gates``; k unscaled, the scale folded into c~ and w):

    c~ = scale (Q K^T) * D,    num = c~ V + a * (Q C0),    nrm = rowsum(c~) + a * (Q n0)
    h = num / den,       den = max(|nrm|, exp(-m)) + eps
    C_end = decay C0 + K^T (w * V),    n_end = decay n0 + K^T w,    decay = exp(m0 - M_{L-1})

Going back: dnum = dh / den and dnrm = -(dh . h) slope / den; the start state collects
dC0 = (a Q)^T dnum and dn0 = (a Q)^T dnrm plus decay times the gradient of the end state, a scan
across chunks from last to first. A log weight's gradient is its term times the term's gradient:
dlogD = dc~ * c~, dlog a_t = q_t . dq_t (start part), dlog w_s = k_s . dk_s (end part), and
dlog decay = decay (<dC_end, C0> + <dn_end, n0>). The log weights are b_t - b_s + i_s (D), b_t (a),
g - b_s + i_s (w) and g (decay) plus constants, with g = b_{L-1}, which gives di and db. The sums
follow the reference's terms, so structural zeros (a single step's own b_t - b_t) stay exact.
"""

import torch

from kernels.mlstm.chunking import C_part, blocks, n_part, scan_state_gradients
from kernels.mlstm.chunkwise_gates import ChunkGates, gate_matrix, gated_scores


def _start_state_paths(dh, q, h, states, denominator, slope, gates: ChunkGates, block: int):
    """Gradients through each chunk's start state: dq (N, L, DH) so far and the joined gradient of
    the start state through the chunk's own outputs, in the slots ``scan_state_gradients`` takes
    ((N + 1, DH + 1, DH), chunk j's in slot j). Also dnrm and dlog a (N, L).
    """
    N, L, DH = q.shape
    dq, d_slots = q.new_empty(N, L, DH), q.new_empty(N + 1, DH + 1, DH)
    dh_dot_h, d_normaliser, d_log_a = (q.new_empty(N, L) for _ in range(3))
    scaled_workspace = q.new_empty(min(block, N), L, DH + 1)  # [a * dnum | a * dnrm]
    for b in blocks(N, block):
        scaled = scaled_workspace[: b.stop - b.start]  # (n, L, DH + 1)
        product = scaled[..., :DH]  # (n, L, DH) scratch
        torch.sum(torch.mul(dh[b], h[b], out=product), -1, out=dh_dot_h[b])
        torch.mul(dh_dot_h[b], slope[b], out=d_normaliser[b]).div_(denominator[b]).neg_()
        a = gates.start_weight[b]  # (n, L)
        torch.mul(dh[b], (a / denominator[b]).unsqueeze(2), out=scaled[..., :DH])
        torch.mul(a, d_normaliser[b], out=scaled[..., DH])
        torch.bmm(scaled.transpose(1, 2), q[b], out=d_slots[b])
        dq_start = torch.bmm(scaled, states[b], out=dq[b])  # (n, L, DH) = a dnum C0^T + a dnrm n0^T
        torch.sum(torch.mul(dq_start, q[b], out=product), -1, out=d_log_a[b])
    return dq, d_slots, d_normaliser, d_log_a


def _chunk_paths(
    dq, dh, q, k, v, states, d_ends, denominator, d_normaliser, gates: ChunkGates, scale: float, block: int
):
    """Add the intra-chunk paths to dq; dk and dv (N, L, DH), and the row and column sums of dlogD,
    dlog w (N, L) and <dC_end, C0> + <dn_end, n0> (N,), from the intra-chunk and end-state paths.

    states, d_ends (N, DH + 1, DH): joined states entering the chunks, gradients of those leaving them.
    """
    N, L, DH = q.shape
    dk, dv = torch.empty_like(q), torch.empty_like(q)
    row_sums, column_sums, d_log_w = (q.new_empty(N, L) for _ in range(3))
    d_decay = q.new_empty(N)
    gate_workspace, c_tilde_workspace, score_workspace = (q.new_empty(min(block, N), L, L) for _ in range(3))
    numerator_workspace = q.new_empty(min(block, N), L, DH)
    state_workspace = q.new_empty(min(block, N), DH + 1, DH)
    for b in blocks(N, block):
        size = b.stop - b.start
        torch.sum(torch.mul(d_ends[b], states[b], out=state_workspace[:size]), (1, 2), out=d_decay[b])
        D = gate_matrix(gates, b, out=gate_workspace[:size])  # (n, L, L)
        c_tilde = gated_scores(q[b], k[b], D, scale, out=c_tilde_workspace[:size])  # (n, L, L)
        d_numerator = torch.div(dh[b], denominator[b].unsqueeze(2), out=numerator_workspace[:size])  # (n, L, DH)
        w = gates.end_weight[b].unsqueeze(2)  # (n, L, 1)
        torch.bmm(k[b], C_part(d_ends[b]), out=dv[b]).mul_(w).baddbmm_(c_tilde.transpose(1, 2), d_numerator)
        d_c_tilde = torch.bmm(d_numerator, v[b].transpose(1, 2), out=score_workspace[:size])  # (n, L, L)
        d_c_tilde.add_(d_normaliser[b].unsqueeze(2))
        d_log_D = c_tilde.mul_(d_c_tilde)  # (n, L, L)
        torch.sum(d_log_D, 2, out=row_sums[b])
        torch.sum(d_log_D, 1, out=column_sums[b])
        d_scores = d_c_tilde.mul_(D)  # (n, L, L) the gradient of Q K^T over scale
        dq[b].baddbmm_(d_scores, k[b], alpha=scale)
        to_end = torch.bmm(v[b], C_part(d_ends[b]).transpose(1, 2), out=dk[b])  # (n, L, DH) V dC_end^T + dn_end
        to_end.add_(n_part(d_ends[b]).unsqueeze(1))
        torch.sum(torch.mul(to_end, k[b], out=d_numerator), -1, out=d_log_w[b]).mul_(gates.end_weight[b])
        to_end.mul_(w).baddbmm_(d_scores.transpose(1, 2), q[b], alpha=scale)
    return dk, dv, row_sums, column_sums, d_log_w, d_decay


def chunkwise_backward(
    dh, d_final, q, k, v, states, h, denominator, slope, gates: ChunkGates, scale: float, block: int
):
    """dq, dk, dv (N, L, DH), di, d_log_f_cum (N, L) and the joined start-state gradient (BH, DH + 1, DH).

    Chunked tensors are flat over N = BH * NC chunks; states (N, DH + 1, DH) enter the chunks;
    d_final (BH, DH + 1, DH) is the gradient of the joined state after the last chunk.
    """
    N, L, DH = q.shape
    BH = d_final.shape[0]
    NC = N // BH
    dq, d_slots, d_normaliser, d_log_a = _start_state_paths(dh, q, h, states, denominator, slope, gates, block)
    d_start = scan_state_gradients(d_slots, gates.decay.view(BH, NC), d_final)  # (BH, DH + 1, DH)
    dk, dv, row_sums, column_sums, d_log_w, d_decay = _chunk_paths(
        dq, dh, q, k, v, states, d_slots[1:], denominator, d_normaliser, gates, scale, block
    )
    di = column_sums + d_log_w  # (N, L)
    d_log_f_cum = (row_sums - column_sums).add_(d_log_a).sub_(d_log_w)  # (N, L)
    d_log_f_cum[:, -1] += d_log_w.sum(-1) + gates.decay * d_decay
    return dq, dk, dv, di, d_log_f_cum, d_start
