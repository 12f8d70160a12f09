"""sLSTM scan as one autograd node with a hand-written backward (paper Section 2.2, Appendix A.2).

The autograd scan records about fifteen nodes per time step, and its backward runs each of them plus two small
matmuls (into h_{t-1} and into R) per step. Here the forward keeps the pre-activations and the states of all
steps; the backward recomputes the gate activations of all steps at once, walks back through time with a few
fused elementwise ops and one matmul (into h_{t-1}) per step, and forms the gradient of R as one batched matmul
over all steps. The stabiliser m carries no gradient, as in the reference scan.

Per step, with m detached (f' and i' the stabilised gates, o = sigmoid(o~), z = tanh(z~)):
    c_t = f' c_{t-1} + i' z,   n_t = f' n_{t-1} + i',   h_t = o c_t / n_t
so, for the gradients dh, dc, dn arriving at step t:
    dc += dh o / n_t,   dn -= dh h_t / n_t,   do~ = dh (c_t / n_t) o (1 - o),
    dz~ = dc i' (1 - z^2),   di~ = (dc z + dn) i',   dlog f = (dc c_{t-1} + dn n_{t-1}) f',
    dc_{t-1} = dc f',   dn_{t-1} = dn f',   dh_{t-1} = [di~, df~, dz~, do~] R^T (clipped if asked).
"""

import torch
from torch.nn.functional import logsigmoid

from kernels.backends import register
from kernels.slstm.scan import SLSTMState, batch_first, heads_first, scan_autograd


def _log_forget(f_tilde: torch.Tensor, forget_gate: str) -> torch.Tensor:
    return logsigmoid(f_tilde) if forget_gate == "sigmoid" else f_tilde


class FusedSLSTMScan(torch.autograd.Function):
    """(wx + b) (S, NH, B, 4 DH) heads-first, R (NH, DH, 4 DH), initial h, c, n, m (NH, B, DH; m detached and
    -inf where n == 0) -> h of every step (S, NH, B, DH) and the final h, c, n, m."""

    @staticmethod
    def forward(ctx, wx_plus_b, R_heads, h0, c0, n0, m0, forget_gate: str, recurrent_grad_clip: float | None):
        S, NH, B, _ = wx_plus_b.shape
        DH = R_heads.shape[1]
        # index 0 holds the initial state, index t + 1 the state after step t
        H, C, N, M = (wx_plus_b.new_empty(S + 1, NH, B, DH) for _ in range(4))  # (S + 1, NH, B, DH) each
        H[0], C[0], N[0], M[0] = h0, c0, n0, m0
        preactivations = torch.empty_like(wx_plus_b)  # (S, NH, B, 4 DH)
        for t in range(S):
            torch.baddbmm(wx_plus_b[t], H[t], R_heads, out=preactivations[t])  # (NH, B, 4 DH)
            i_tilde, f_tilde, z_tilde, o_tilde = preactivations[t].view(NH, B, 4, DH).unbind(2)
            log_f_plus_m = _log_forget(f_tilde, forget_gate) + M[t]  # (NH, B, DH)
            m = torch.maximum(log_f_plus_m, i_tilde, out=M[t + 1])  # (NH, B, DH)
            i_stable, f_stable = torch.exp(i_tilde - m), torch.exp(log_f_plus_m - m)  # (NH, B, DH) each
            c = torch.addcmul(f_stable * C[t], i_stable, torch.tanh(z_tilde), out=C[t + 1])  # (NH, B, DH)
            n = torch.addcmul(i_stable, f_stable, N[t], out=N[t + 1])  # (NH, B, DH)
            torch.mul(torch.sigmoid(o_tilde), c / n, out=H[t + 1])  # (NH, B, DH)
        ctx.save_for_backward(preactivations, R_heads, H, C, N, M)
        ctx.forget_gate, ctx.recurrent_grad_clip = forget_gate, recurrent_grad_clip
        m_last = M[S].clone()
        ctx.mark_non_differentiable(m_last)
        return H[1:], H[S].clone(), C[S].clone(), N[S].clone(), m_last

    @staticmethod
    def backward(ctx, grad_h_all, grad_h_last, grad_c_last, grad_n_last, _grad_m_last):
        preactivations, R_heads, H, C, N, M = ctx.saved_tensors
        S, NH, B, _ = preactivations.shape
        DH = R_heads.shape[1]
        # gate activations and the per-step coefficients of the backward, all steps at once: (S, NH, B, DH) each
        i_tilde, f_tilde, z_tilde, o_tilde = preactivations.view(S, NH, B, 4, DH).unbind(3)
        log_f = _log_forget(f_tilde, ctx.forget_gate)
        i_stable = torch.exp(i_tilde - M[1:])
        f_stable = torch.exp(log_f + M[:-1] - M[1:])
        z, o = torch.tanh(z_tilde), torch.sigmoid(o_tilde)
        inverse_n = N[1:].reciprocal()
        dc_per_dh = o * inverse_n
        dn_per_dh = -H[1:] * inverse_n
        do_per_dh = C[1:] * inverse_n * o * (1 - o)
        dz_per_dc = i_stable * (1 - z * z)
        di_per_dc = z * i_stable
        dlog_f_per_df = f_stable * (torch.sigmoid(-f_tilde) if ctx.forget_gate == "sigmoid" else 1)

        grad_h_all = torch.zeros_like(H[1:]) if grad_h_all is None else grad_h_all  # (S, NH, B, DH)
        zeros = torch.zeros_like(H[0])  # (NH, B, DH)
        dh_recurrent = zeros if grad_h_last is None else grad_h_last
        dc = zeros if grad_c_last is None else grad_c_last
        dn = zeros if grad_n_last is None else grad_n_last
        grad_pre = torch.empty_like(preactivations)  # (S, NH, B, 4 DH)
        R_transposed = R_heads.transpose(1, 2)  # (NH, 4 DH, DH)
        for t in range(S - 1, -1, -1):
            dh = grad_h_all[t] + dh_recurrent  # (NH, B, DH)
            dc = torch.addcmul(dc, dh, dc_per_dh[t])
            dn = torch.addcmul(dn, dh, dn_per_dh[t])
            di, df, dz, do = grad_pre[t].view(NH, B, 4, DH).unbind(2)  # views to write into
            torch.mul(dh, do_per_dh[t], out=do)
            torch.mul(dc, dz_per_dc[t], out=dz)
            torch.addcmul(dc * di_per_dc[t], dn, i_stable[t], out=di)
            torch.mul(torch.addcmul(dc * C[t], dn, N[t]), dlog_f_per_df[t], out=df)
            dc, dn = dc * f_stable[t], dn * f_stable[t]
            dh_recurrent = torch.bmm(grad_pre[t], R_transposed)  # (NH, B, DH)
            if ctx.recurrent_grad_clip is not None:
                dh_recurrent = dh_recurrent.clamp(-ctx.recurrent_grad_clip, ctx.recurrent_grad_clip)
        # dR[h] = sum over steps and batch of h_{t-1}^T dpre_t: one batched matmul over heads
        h_previous = H[:-1].permute(1, 3, 0, 2).reshape(NH, DH, S * B)  # (NH, DH, S B)
        grad_R = h_previous @ grad_pre.transpose(0, 1).reshape(NH, S * B, 4 * DH)  # (NH, DH, 4 DH)
        return grad_pre, grad_R, dh_recurrent, dc, dn, None, None, None


def scan_fused(wx, R, b, state: SLSTMState, forget_gate: str, recurrent_grad_clip: float | None):
    """Backend ``"torch"`` of ``scan``: the fused node; under autocast the autograd loop (mixed dtypes)."""
    if torch.is_autocast_enabled(wx.device.type):
        return scan_autograd(wx, R, b, state, forget_gate, recurrent_grad_clip)
    wx_plus_b, R_heads, h, c, n, m = heads_first(wx, R, b, state)
    hidden_states, h, c, n, m = FusedSLSTMScan.apply(wx_plus_b, R_heads, h, c, n, m, forget_gate, recurrent_grad_clip)
    return batch_first(hidden_states, h, c, n, m)


register("slstm.scan", "torch", scan_fused)
