"""mLSTM in parallel form (paper Appendix A.3): an S x S gate matrix per head, memory quadratic in S.

A given initial state enters as one extra column of the gate matrix with log weight
``(cumulative log f up to t) + m0``, so the row max (the stabiliser m_t) equals the recurrent one.
"""

import math

import torch

from kernels.backends import register, resolve
from kernels.mlstm.gates import MLSTMState, check_inputs, log_forget_gate, start_state


def stabilized_parallel(q, k, v, i, log_f_cum, start: MLSTMState, eps: float) -> torch.Tensor:
    """Cell outputs h~ of a block of L steps that begins in state ``start``, in parallel form.

    Any leading dims (...): q, k, v (..., L, DH) with k already scaled by 1/sqrt(DH); i and
    log_f_cum (..., L), log_f_cum the log forget gates summed from the block start up to and
    including each step; start fields (..., DH, DH), (..., DH), (...). Returns h~ (..., L, DH).
    """
    L = q.shape[-2]
    causal = torch.ones(L, L, dtype=torch.bool, device=q.device).tril()  # (L, L)
    log_d = log_f_cum[..., :, None] - log_f_cum[..., None, :] + i[..., None, :]  # (..., L, L)
    log_d = torch.where(causal, log_d, float("-inf"))  # (..., L, L)
    log_start = log_f_cum + start.m[..., None]  # (..., L) log weight of the start state per row
    m = torch.maximum(log_d.detach().amax(-1), log_start.detach())  # (..., L)
    d = torch.exp(log_d - m[..., None])  # (..., L, L)
    c_tilde = (q @ k.transpose(-2, -1)) * d  # (..., L, L)
    q_start = q * torch.exp(log_start - m)[..., None]  # (..., L, DH)
    numerator = c_tilde @ v + q_start @ start.C  # (..., L, DH)
    normaliser = c_tilde.sum(-1) + (q_start @ start.n[..., None]).squeeze(-1)  # (..., L)
    return numerator / (torch.maximum(normaliser.abs(), torch.exp(-m)) + eps)[..., None]


def _final_state(k, v, i, log_f_cum, start: MLSTMState) -> MLSTMState:
    """State after the last step: the last row of the gate matrix weights every step's k v^T."""
    log_w = log_f_cum[..., -1:] - log_f_cum + i  # (B, NH, S)
    log_start = log_f_cum[..., -1] + start.m  # (B, NH)
    m = torch.maximum(log_w.detach().amax(-1), log_start.detach())  # (B, NH)
    w = torch.exp(log_w - m[..., None])  # (B, NH, S)
    start_weight = torch.exp(log_start - m)[..., None]  # (B, NH, 1)
    C = start_weight[..., None] * start.C + k.transpose(-2, -1) @ (w[..., None] * v)  # (B, NH, DH, DH)
    n = start_weight * start.n + (w[..., None, :] @ k).squeeze(-2)  # (B, NH, DH)
    return MLSTMState(C, n, m)


def _parallel_torch(q, k, v, i, f, *, initial_state, return_state, forget_gate, eps):
    start = start_state(initial_state, q)
    k = k / math.sqrt(q.shape[-1])  # (B, NH, S, DH)
    log_f_cum = log_forget_gate(f, forget_gate).cumsum(-1)  # (B, NH, S)
    h = stabilized_parallel(q, k, v, i, log_f_cum, start, eps)  # (B, NH, S, DH)
    return (h, _final_state(k, v, i, log_f_cum, start)) if return_state else h


register("mlstm.parallel", "torch", _parallel_torch)


def parallel(
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
    """mLSTM cell outputs h~ (B, NH, S, DH) in parallel form, plus the final state if ``return_state``.

    q, k, v: (B, NH, S, DH); i, f: gate pre-activations (B, NH, S); k is scaled by 1/sqrt(DH) here.
    ``initial_state`` defaults to the empty state (C = n = 0, m = -inf).
    """
    check_inputs(q, k, v, i, f, forget_gate=forget_gate, state=initial_state)
    implementation = resolve("mlstm.parallel", backend, q.device)
    return implementation(
        q, k, v, i, f, initial_state=initial_state, return_state=return_state, forget_gate=forget_gate, eps=eps
    )
