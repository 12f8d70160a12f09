"""sLSTM scan: the stabilised sLSTM recurrence over a sequence (paper Section 2.2, Appendix A.2).

Backends: ``"torch"`` (default off CUDA) is one autograd node with a hand-written backward
(``kernels.slstm.fused``); ``"torch_autograd"`` is the reference, the same step loop differentiated by
autograd; ``"torch_compile"`` compiles the step (``kernels.slstm.compiled``). All loop over time steps in
Python; every step is vectorised over batch, heads and gates (one batched matmul for the recurrent
contributions of all four gates).
"""

from typing import NamedTuple

import torch
from torch.nn.functional import logsigmoid

from kernels.backends import register, resolve

GATES = ("i", "f", "z", "o")
FORGET_GATES = ("sigmoid", "exp")


class SLSTMState(NamedTuple):
    """Recurrent state of the sLSTM; each field has shape (B, NH, DH).

    ``n == 0`` marks a cell without history: its stabiliser ``m`` is ignored and the next step
    takes ``m = i~`` (as the official vanilla cell does when started from zeros).
    """

    h: torch.Tensor  # hidden state
    c: torch.Tensor  # cell state
    n: torch.Tensor  # normaliser state
    m: torch.Tensor  # stabiliser state (log scale of c and n)


def initial_state(batch: int, num_heads: int, head_dim: int, *, dtype: torch.dtype, device: torch.device) -> SLSTMState:
    """The default state before the first step: h = c = n = 0 and m = -inf."""
    zeros = torch.zeros(batch, num_heads, head_dim, dtype=dtype, device=device)  # (B, NH, DH)
    return SLSTMState(h=zeros, c=zeros, n=zeros, m=torch.full_like(zeros, float("-inf")))


_default_initial_state = initial_state  # ``scan``'s keyword argument shadows the name


class _ClipRecurrentGradient(torch.autograd.Function):
    """Identity whose backward clamps the gradient elementwise to [-clip, clip]."""

    @staticmethod
    def forward(ctx, hidden: torch.Tensor, clip: float) -> torch.Tensor:
        ctx.clip = clip
        return hidden.view_as(hidden)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        return grad.clamp(-ctx.clip, ctx.clip), None


def scan(
    wx: torch.Tensor,
    R: torch.Tensor,
    b: torch.Tensor,
    *,
    initial_state: SLSTMState | None = None,
    return_state: bool = False,
    forget_gate: str = "sigmoid",
    recurrent_grad_clip: float | None = None,
    backend: str = "auto",
) -> torch.Tensor | tuple[torch.Tensor, SLSTMState]:
    """Run the sLSTM over a sequence.

    Args:
        wx: (B, S, 4, NH, DH) input contributions ``W x_t`` to the pre-activations of the gates
            (i, f, z, o), in that order on dim 2.
        R: (4, NH, DH, DH) block-diagonal recurrent matrices, one block per gate and head. The
            recurrent contribution is ``(R h_{t-1})[g, h, e] = sum_d h_{t-1}[h, d] * R[g, h, d, e]``,
            i.e. ``R[g, h]`` maps the previous hidden state of head h (row index d) to the
            pre-activation of gate g (column index e).
        b: (4, NH, DH) biases of the gates (i, f, z, o).
        initial_state: state before the first step, fields (B, NH, DH); default: h = c = n = 0,
            m = -inf (see ``initial_state``). Where n == 0 the cell has no history and m is ignored.
        return_state: also return the state after the last step.
        forget_gate: ``"sigmoid"`` (f = sigmoid(f~)) or ``"exp"`` (f = exp(f~)).
        recurrent_grad_clip: if set, the gradient flowing back through the recurrent connection
            (into h_{t-1} via R) is clamped elementwise to [-clip, clip] (the paper uses 10); the
            gradient arriving at h_t from outside the scan is not clipped.
        backend: ``"auto"`` or a backend registered for op ``"slstm.scan"`` (``"torch"``,
            ``"torch_autograd"``, ``"torch_compile"``, ...).

    Returns:
        h: (B, S, NH, DH) hidden states ``h_t = o_t * c_t / n_t``; with ``return_state`` the pair
        ``(h, SLSTMState)`` holding the final state.

    The stabiliser m carries no gradient: h does not depend on it (paper Appendix A.2).
    """
    _check_inputs(wx, R, b, initial_state, forget_gate, recurrent_grad_clip)
    if initial_state is None:
        batch, _, _, num_heads, head_dim = wx.shape
        initial_state = _default_initial_state(batch, num_heads, head_dim, dtype=wx.dtype, device=wx.device)
    implementation = resolve("slstm.scan", backend, wx.device)
    h, final_state = implementation(wx, R, b, initial_state, forget_gate, recurrent_grad_clip)
    return (h, final_state) if return_state else h


def _check_inputs(wx, R, b, state, forget_gate, recurrent_grad_clip) -> None:
    if wx.dim() != 5 or wx.shape[2] != len(GATES):
        raise ValueError(f"wx must have shape (B, S, 4, NH, DH) with gates {GATES} on dim 2; got {tuple(wx.shape)}")
    batch, seq_len, _, num_heads, head_dim = wx.shape
    if seq_len == 0:
        raise ValueError(f"wx must hold at least one time step; got shape {tuple(wx.shape)}")
    if tuple(R.shape) != (4, num_heads, head_dim, head_dim):
        raise ValueError(
            f"R must have shape (4, NH, DH, DH) = {(4, num_heads, head_dim, head_dim)} to match wx {tuple(wx.shape)}; "
            f"got {tuple(R.shape)}"
        )
    if tuple(b.shape) != (4, num_heads, head_dim):
        raise ValueError(
            f"b must have shape (4, NH, DH) = {(4, num_heads, head_dim)} to match wx; got {tuple(b.shape)}"
        )
    if state is not None:
        for name, tensor in zip(SLSTMState._fields, state):
            if tuple(tensor.shape) != (batch, num_heads, head_dim):
                raise ValueError(
                    f"initial_state.{name} must have shape (B, NH, DH) = {(batch, num_heads, head_dim)}; "
                    f"got {tuple(tensor.shape)}"
                )
    if forget_gate not in FORGET_GATES:
        raise ValueError(f"unknown forget_gate {forget_gate!r}; valid choices: {list(FORGET_GATES)}")
    if recurrent_grad_clip is not None and not recurrent_grad_clip > 0:
        raise ValueError(f"recurrent_grad_clip must be a positive number or None; got {recurrent_grad_clip!r}")


def heads_first(wx, R, b, state: SLSTMState):
    """The scan's working layout: (wx + b) (S, NH, B, 4 DH), the recurrent matrices of all gates side by side
    (NH, DH, 4 DH), and the state fields (NH, B, DH) with m detached and -inf where n == 0 (no history: the first
    step then takes m = i~)."""
    batch, seq_len, num_gates, num_heads, head_dim = wx.shape
    wx_plus_b = (wx + b).permute(1, 3, 0, 2, 4).reshape(seq_len, num_heads, batch, num_gates * head_dim)
    R_heads = R.permute(1, 2, 0, 3).reshape(num_heads, head_dim, num_gates * head_dim)
    # contiguous: a compiled step is specialised to the strides of its first call's inputs
    h, c, n, m = (tensor.transpose(0, 1).contiguous() for tensor in state)  # each (NH, B, DH)
    m = torch.where(n == 0, float("-inf"), m.detach())  # (NH, B, DH)
    return wx_plus_b, R_heads, h, c, n, m


def batch_first(hidden_states: torch.Tensor, h, c, n, m) -> tuple[torch.Tensor, SLSTMState]:
    """h of all steps (S, NH, B, DH) -> (B, S, NH, DH); final fields (NH, B, DH) -> SLSTMState of (B, NH, DH)."""
    final_state = SLSTMState(*(tensor.transpose(0, 1) for tensor in (h, c, n, m)))
    return hidden_states.permute(2, 0, 1, 3).contiguous(), final_state


def cell(wx_plus_b_t, h_recurrent, c, n, m, R_heads, forget_gate: str):
    """One stabilised sLSTM step, heads first: wx_plus_b_t (NH, B, 4 DH); h, c, n, m (NH, B, DH); R (NH, DH, 4 DH)."""
    num_heads, batch, head_dim = c.shape
    preactivations = torch.baddbmm(wx_plus_b_t, h_recurrent, R_heads)  # (NH, B, 4 * DH)
    i_tilde, f_tilde, z_tilde, o_tilde = preactivations.view(num_heads, batch, 4, head_dim).unbind(2)
    log_f = logsigmoid(f_tilde) if forget_gate == "sigmoid" else f_tilde  # (NH, B, DH)
    log_f_plus_m = log_f + m  # (NH, B, DH)
    m = torch.maximum(log_f_plus_m.detach(), i_tilde.detach())  # (NH, B, DH), no gradient
    i_stable = torch.exp(i_tilde - m)  # (NH, B, DH)
    f_stable = torch.exp(log_f_plus_m - m)  # (NH, B, DH)
    c = torch.addcmul(f_stable * c, i_stable, torch.tanh(z_tilde))  # (NH, B, DH)
    n = torch.addcmul(i_stable, f_stable, n)  # (NH, B, DH)
    h = torch.sigmoid(o_tilde) * c / n  # (NH, B, DH)
    return h, c, n, m


def scan_loop(wx, R, b, state: SLSTMState, forget_gate: str, recurrent_grad_clip: float | None, *, step=cell):
    """The scan as a Python loop of ``step`` (default: ``cell``) under autograd; returns (h, final state)."""
    wx_plus_b, R_heads, h, c, n, m = heads_first(wx, R, b, state)
    hidden_states = []
    for wx_plus_b_t in wx_plus_b:  # (NH, B, 4 * DH)
        h_recurrent = h if recurrent_grad_clip is None else _ClipRecurrentGradient.apply(h, recurrent_grad_clip)
        h, c, n, m = step(wx_plus_b_t, h_recurrent, c, n, m, R_heads, forget_gate)  # each (NH, B, DH)
        hidden_states.append(h)
    return batch_first(torch.stack(hidden_states), h, c, n, m)


def scan_autograd(wx, R, b, state: SLSTMState, forget_gate: str, recurrent_grad_clip: float | None):
    """Reference backend ``"torch_autograd"``: the step loop, differentiated by autograd."""
    return scan_loop(wx, R, b, state, forget_gate, recurrent_grad_clip)


register("slstm.scan", "torch_autograd", scan_autograd, priority=-1)
