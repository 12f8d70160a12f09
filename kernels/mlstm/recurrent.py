"""mLSTM in recurrent form (paper eqs. for C_t, n_t, h~_t with the stabiliser m_t): one step at a time."""

import math

import torch

from kernels.backends import register, resolve
from kernels.mlstm.gates import MLSTMState, check_inputs, log_forget_gate, start_state


def _step_torch(q, k, v, i, f, *, state, forget_gate, eps):
    DH = q.shape[-1]
    previous = start_state(state, q)
    log_f = log_forget_gate(f, forget_gate)[..., 0]  # (B, NH)
    i = i[..., 0]  # (B, NH)
    m = torch.maximum(log_f.detach() + previous.m, i.detach())  # (B, NH)
    f_act = torch.exp(log_f + previous.m - m)[..., None]  # (B, NH, 1)
    i_act = torch.exp(i - m)[..., None]  # (B, NH, 1)
    k = k[:, :, 0] / math.sqrt(DH)  # (B, NH, DH)
    C = f_act[..., None] * previous.C + (i_act * k)[..., :, None] * v[:, :, 0, None, :]  # (B, NH, DH, DH)
    n = f_act * previous.n + i_act * k  # (B, NH, DH)
    numerator = q @ C  # (B, NH, 1, DH)
    qn = q @ n[..., None]  # (B, NH, 1, 1)
    h = numerator / (torch.maximum(qn.abs(), torch.exp(-m)[..., None, None]) + eps)  # (B, NH, 1, DH)
    return h, MLSTMState(C, n, m)


def _recurrent_torch(q, k, v, i, f, *, initial_state, return_state, forget_gate, eps):
    state = initial_state
    h = []
    # split, not indexing in the loop: the backward of one index op allocates the whole tensor
    for q_t, k_t, v_t, i_t, f_t in zip(*(x.split(1, dim=2) for x in (q, k, v, i, f))):
        h_t, state = _step_torch(q_t, k_t, v_t, i_t, f_t, state=state, forget_gate=forget_gate, eps=eps)
        h.append(h_t)  # (B, NH, 1, DH)
    h = torch.cat(h, dim=2)  # (B, NH, S, DH)
    return (h, state) if return_state else h


register("mlstm.step", "torch", _step_torch)
register("mlstm.recurrent", "torch", _recurrent_torch)


def step(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    i: torch.Tensor,
    f: torch.Tensor,
    *,
    state: MLSTMState | None = None,
    forget_gate: str = "sigmoid",
    eps: float = 1e-6,
    backend: str = "auto",
) -> tuple[torch.Tensor, MLSTMState]:
    """One mLSTM step: q, k, v (B, NH, 1, DH), i, f (B, NH, 1) -> (h~ (B, NH, 1, DH), new state).

    ``state`` defaults to the empty state (C = n = 0, m = -inf).
    """
    check_inputs(q, k, v, i, f, forget_gate=forget_gate, state=state)
    if q.shape[2] != 1:
        raise ValueError(f"step takes one time step (S = 1); got q {tuple(q.shape)}; use recurrent() for S > 1")
    implementation = resolve("mlstm.step", backend, q.device)
    return implementation(q, k, v, i, f, state=state, forget_gate=forget_gate, eps=eps)


def recurrent(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    i: torch.Tensor,
    f: torch.Tensor,
    *,
    initial_state: MLSTMState | None = None,
    return_state: bool = False,
    forget_gate: str = "sigmoid",
    eps: float = 1e-6,
    backend: str = "auto",
):
    """mLSTM cell outputs h~ (B, NH, S, DH), one ``step`` at a time, plus the final state if ``return_state``.

    Same arguments and results as ``parallel``.
    """
    check_inputs(q, k, v, i, f, forget_gate=forget_gate, state=initial_state)
    implementation = resolve("mlstm.recurrent", backend, q.device)
    return implementation(
        q, k, v, i, f, initial_state=initial_state, return_state=return_state, forget_gate=forget_gate, eps=eps
    )
