"""mLSTM in parallel form (paper Appendix A.3): a causal S x S gate matrix per head.

A given initial state enters as one extra column of the gate matrix with log weight
``(cumulative log f up to t) + m0``, so the row max (the stabiliser m_t) equals the recurrent one.

The torch backend never builds the whole matrix: it runs over blocks of query rows, each needing only
the keys up to its end (``parallel_tiled``), so memory is O(block x S) in forward and backward.
``stabilized_parallel`` is the untiled formula (also the per-chunk math of the chunkwise form), and
``untiled_parallel`` the whole op on it: the reference the tiled form is tested against.
"""

import math
from functools import partial

import torch

from kernels.backends import register, resolve
from kernels.mlstm.gates import MLSTMState, check_inputs, log_forget_gate, start_state
from kernels.mlstm.parallel_tiled import causal_decayed_sums

# Measured on 2 CPU cores, float32, B=1 NH=4 DH=64, among 64..512: at or near the fastest for
# S = 256..4096; the largest intermediate (B, NH, 128, S) is an eighth of one S x S matrix per head at NH = 4.
DEFAULT_QUERY_BLOCK_SIZE = 128


def _cell_output(weighted_v, weight_sum, q, log_start, m, start: MLSTMState, eps: float) -> torch.Tensor:
    """h~ from each row's gate-weighted sums over its steps: add the start state's part, then normalise.

    weighted_v (..., L, DH) = sum_s C~_ts v_s and weight_sum (..., L) = sum_s C~_ts; log_start (..., L)
    the log weight of the start state per row, m (..., L) the row's stabiliser (no gradient). With
    w_t = exp(log_start_t - m_t):
    h~_t = (weighted_v_t + w_t q_t C) / (max(|weight_sum_t + w_t q_t . n|, exp(-m_t)) + eps).
    """
    q_start = q * torch.exp(log_start - m)[..., None]  # (..., L, DH)
    numerator = weighted_v + q_start @ start.C  # (..., L, DH)
    normaliser = weight_sum + (q_start @ start.n[..., None]).squeeze(-1)  # (..., L)
    return numerator / (torch.maximum(normaliser.abs(), torch.exp(-m)) + eps)[..., None]


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
    return _cell_output(c_tilde @ v, c_tilde.sum(-1), q, log_start, m, start, eps)


def stabilized_parallel_tiled(q, k, v, i, log_f_cum, start: MLSTMState, eps: float, *, block_size: int) -> torch.Tensor:
    """``stabilized_parallel`` over blocks of ``block_size`` query rows: no (..., L, L) tensor at all.

    With g_s = i_s - log_f_cum_s, the log gate matrix is log D_ts = log_f_cum_t + g_s, so the row max
    is m_t = max(log_f_cum_t + max_{s <= t} g_s, log_start_t): a running max, known before any tile.
    """
    log_start = log_f_cum + start.m[..., None]  # (..., L) log weight of the start state per row
    key_log_weight = i - log_f_cum  # (..., L)
    with torch.no_grad():
        m = torch.maximum(log_f_cum + key_log_weight.cummax(-1).values, log_start)  # (..., L)
    sums = causal_decayed_sums(q, k, v, log_f_cum - m, key_log_weight, block_size=block_size)  # (..., L, DH + 1)
    return _cell_output(sums[..., :-1], sums[..., -1], q, log_start, m, start, eps)


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


def _parallel_with(cell_outputs, q, k, v, i, f, *, initial_state, return_state, forget_gate, eps):
    """h~ (and the final state) with ``cell_outputs`` = stabilized_parallel or a tiled equivalent."""
    start = start_state(initial_state, q)
    k = k / math.sqrt(q.shape[-1])  # (B, NH, S, DH)
    log_f_cum = log_forget_gate(f, forget_gate).cumsum(-1)  # (B, NH, S)
    h = cell_outputs(q, k, v, i, log_f_cum, start, eps)  # (B, NH, S, DH)
    return (h, _final_state(k, v, i, log_f_cum, start)) if return_state else h


def _parallel_torch(q, k, v, i, f, *, query_block_size, **options):
    return _parallel_with(partial(stabilized_parallel_tiled, block_size=query_block_size), q, k, v, i, f, **options)


def _parallel_untiled(q, k, v, i, f, *, query_block_size, **options):
    return _parallel_with(stabilized_parallel, q, k, v, i, f, **options)


register("mlstm.parallel", "torch", _parallel_torch)
register("mlstm.parallel", "torch_autograd", _parallel_untiled, priority=-1)  # the reference; auto never picks it


def untiled_parallel(q, k, v, i, f, *, initial_state=None, return_state=False, forget_gate="sigmoid", eps=1e-6):
    """``parallel`` with the whole S x S gate matrix and autograd's backward: the reference for the tiled form."""
    options = dict(initial_state=initial_state, return_state=return_state, forget_gate=forget_gate, eps=eps)
    return parallel(q, k, v, i, f, **options, backend="torch_autograd")


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
    query_block_size: int = DEFAULT_QUERY_BLOCK_SIZE,
    backend: str = "auto",
):
    """mLSTM cell outputs h~ (B, NH, S, DH) in parallel form, plus the final state if ``return_state``.

    q, k, v: (B, NH, S, DH); i, f: gate pre-activations (B, NH, S); k is scaled by 1/sqrt(DH) here.
    ``initial_state`` defaults to the empty state (C = n = 0, m = -inf). ``query_block_size``: query
    rows per tile; the largest intermediate is (B, NH, query_block_size, S), and one tile covers
    every S <= query_block_size.
    """
    check_inputs(q, k, v, i, f, forget_gate=forget_gate, state=initial_state)
    if not isinstance(query_block_size, int) or query_block_size < 1:
        raise ValueError(f"query_block_size must be a positive int; got {query_block_size!r}")
    implementation = resolve("mlstm.parallel", backend, q.device)
    options = dict(initial_state=initial_state, return_state=return_state, forget_gate=forget_gate, eps=eps)
    return implementation(q, k, v, i, f, **options, query_block_size=query_block_size)
