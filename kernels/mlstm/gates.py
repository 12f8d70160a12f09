"""Shared pieces of the mLSTM kernels: the recurrent state, the forget-gate activation, input checks."""

from typing import NamedTuple

import torch
from torch.nn.functional import logsigmoid

FORGET_GATES = ("sigmoid", "exp")


class MLSTMState(NamedTuple):
    """Stabilised mLSTM state; the true state is ``exp(m) * (C, n)``.

    C is stored key dimension first (``C = sum_t w_t k_t v_t^T``, retrieval ``q^T C``), and the
    keys entering C and n are already scaled by 1/sqrt(DH).
    """

    C: torch.Tensor  # (B, NH, DH, DH)
    n: torch.Tensor  # (B, NH, DH)
    m: torch.Tensor  # (B, NH)


def check_forget_gate(forget_gate: str) -> None:
    if forget_gate not in FORGET_GATES:
        raise ValueError(f"unknown forget_gate {forget_gate!r}; valid choices: {list(FORGET_GATES)}")


def log_forget_gate(f: torch.Tensor, forget_gate: str) -> torch.Tensor:
    """log of the forget gate activation from its pre-activation: logsigmoid(f) or f itself."""
    return logsigmoid(f) if forget_gate == "sigmoid" else f


def check_inputs(q, k, v, i, f, *, forget_gate: str, state: MLSTMState | None) -> None:
    """Raise ValueError naming the offending value unless the inputs fit (B, NH, S, DH) and (B, NH, S)."""
    check_forget_gate(forget_gate)
    if q.dim() != 4 or k.shape != q.shape or v.shape != q.shape:
        raise ValueError(
            f"q, k, v must share one 4-D shape (B, NH, S, DH); got q {tuple(q.shape)}, "
            f"k {tuple(k.shape)}, v {tuple(v.shape)}"
        )
    B, NH, S, DH = q.shape
    if S < 1:
        raise ValueError(f"sequence length S must be at least 1; got q {tuple(q.shape)}")
    if i.shape != (B, NH, S) or f.shape != (B, NH, S):
        raise ValueError(
            f"gate pre-activations i, f must have shape (B, NH, S) = {(B, NH, S)}; "
            f"got i {tuple(i.shape)}, f {tuple(f.shape)}"
        )
    if state is not None:
        expected = MLSTMState(C=(B, NH, DH, DH), n=(B, NH, DH), m=(B, NH))
        got = MLSTMState(*(tuple(x.shape) for x in state))
        if got != expected:
            raise ValueError(f"state shapes must be {expected}; got {got}")


def start_state(state: MLSTMState | None, q: torch.Tensor) -> MLSTMState:
    """The given state with m detached, or the empty state (C = n = 0, m = -inf) for q's batch."""
    if state is not None:
        C, n, m = state
        return MLSTMState(C, n, m.detach())
    B, NH, _, DH = q.shape
    return MLSTMState(
        C=q.new_zeros(B, NH, DH, DH),  # (B, NH, DH, DH)
        n=q.new_zeros(B, NH, DH),  # (B, NH, DH)
        m=q.new_full((B, NH), float("-inf")),  # (B, NH)
    )
