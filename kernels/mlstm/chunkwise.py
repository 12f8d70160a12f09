"""mLSTM in chunkwise form: parallel within chunks of L steps, recurrent across chunks.

Memory is linear in S (one L x L gate matrix per chunk). The states at all chunk boundaries come
from a short loop over chunks on (DH x DH) states; each chunk's contribution to them is one batched
matmul over all chunks. A ragged last chunk is padded with steps that leave the state unchanged
(forget gate 1, input gate 0) and the padded outputs are dropped.

Two torch implementations with the same values and gradients:

- backend ``"torch"`` (the default on CPU): ``ChunkwiseMLSTM`` in ``chunkwise_fast``, one autograd
  Function with a hand-written backward that recomputes the L x L matrices;
- backend ``"torch_autograd"``: ``chunkwise_autograd`` below, plain autograd through
  ``stabilized_parallel``; the reference that tests hold the fast one to.
"""

import math

import torch

from kernels.backends import register, resolve
from kernels.mlstm.chunking import merge_chunks, split_into_chunks
from kernels.mlstm.chunkwise_fast import chunkwise_fast
from kernels.mlstm.gates import MLSTMState, check_inputs, log_forget_gate, start_state
from kernels.mlstm.parallel import stabilized_parallel


def _boundary_stabilisers(log_decay, m_in, m_start) -> torch.Tensor:
    """m at every chunk boundary (B, NH, NC + 1): m_{c+1} = max(log_decay_c + m_c, m_in_c).

    log_decay, m_in: (B, NH, NC), the chunk's total log forget gate and the max log weight of its
    own steps in its end state; m_start: (B, NH). All without gradient.
    """
    m = [m_start]
    for log_decay_c, m_in_c in zip(log_decay.unbind(-1), m_in.unbind(-1)):
        m.append(torch.maximum(log_decay_c + m[-1], m_in_c))
    return torch.stack(m, -1)


def _boundary_states(k, v, i, log_f_cum, start: MLSTMState) -> MLSTMState:
    """States at all chunk boundaries, fields (B, NH, NC + 1, ...); index 0 is ``start``.

    k, v: (B, NH, NC, L, DH), k scaled; i, log_f_cum: (B, NH, NC, L), log_f_cum summed within chunks.
    """
    log_decay = log_f_cum[..., -1]  # (B, NH, NC)
    log_w = log_decay[..., None] - log_f_cum + i  # (B, NH, NC, L) log weight of a step at its chunk's end
    with torch.no_grad():
        m = _boundary_stabilisers(log_decay, log_w.amax(-1), start.m)  # (B, NH, NC + 1)
    w = torch.exp(log_w - m[..., 1:, None])  # (B, NH, NC, L)
    decay = torch.exp(log_decay + m[..., :-1] - m[..., 1:])  # (B, NH, NC)
    C_in = k.transpose(-2, -1) @ (w[..., None] * v)  # (B, NH, NC, DH, DH)
    n_in = (w[..., None, :] @ k).squeeze(-2)  # (B, NH, NC, DH)
    C, n = [start.C], [start.n]
    # unbind, not indexing in the loop: the backward of one index op allocates the whole tensor
    for C_in_c, n_in_c, decay_c in zip(C_in.unbind(2), n_in.unbind(2), decay.unbind(2)):
        C.append(torch.addcmul(C_in_c, decay_c[..., None, None], C[-1]))  # (B, NH, DH, DH)
        n.append(torch.addcmul(n_in_c, decay_c[..., None], n[-1]))  # (B, NH, DH)
    return MLSTMState(torch.stack(C, 2), torch.stack(n, 2), m)


def chunkwise_autograd(q, k, v, i, f, *, initial_state, return_state, forget_gate, eps, chunk_size):
    """Backend ``"torch_autograd"``, the reference: autograd through ``_boundary_states`` and
    ``stabilized_parallel``."""
    S, DH = q.shape[-2:]
    start = start_state(initial_state, q)
    log_f = log_forget_gate(f, forget_gate)  # (B, NH, S)
    q, k, v, i, log_f_cum = split_into_chunks(q, k / math.sqrt(DH), v, i, log_f, chunk_size)  # (.., NC, L[, DH])
    states = _boundary_states(k, v, i, log_f_cum, start)  # fields (B, NH, NC + 1, ...)
    chunk_starts = MLSTMState(states.C[:, :, :-1], states.n[:, :, :-1], states.m[..., :-1])
    h = merge_chunks(stabilized_parallel(q, k, v, i, log_f_cum, chunk_starts, eps), S)  # (B, NH, S, DH)
    if not return_state:
        return h
    return h, MLSTMState(states.C[:, :, -1], states.n[:, :, -1], states.m[..., -1])


def _chunkwise_torch(q, k, v, i, f, *, initial_state, return_state, forget_gate, eps, chunk_size):
    """Backend ``"torch"``: ``ChunkwiseMLSTM`` with its recomputing backward (same values and gradients)."""
    start = start_state(initial_state, q)
    log_f = log_forget_gate(f, forget_gate)  # (B, NH, S)
    return chunkwise_fast(q, k, v, i, log_f, start, return_state=return_state, eps=eps, chunk_size=chunk_size)


register("mlstm.chunkwise", "torch", _chunkwise_torch)
register("mlstm.chunkwise", "torch_autograd", chunkwise_autograd, priority=-1)


def chunkwise(
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
    chunk_size: int = 64,
    backend: str = "auto",
):
    """mLSTM cell outputs h~ (B, NH, S, DH) in chunkwise form, plus the final state if ``return_state``.

    Same arguments and results as ``parallel``; ``chunk_size`` is the number of steps per chunk
    (any S works: a ragged last chunk is padded).
    """
    check_inputs(q, k, v, i, f, forget_gate=forget_gate, state=initial_state)
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive int; got {chunk_size!r}")
    implementation = resolve("mlstm.chunkwise", backend, q.device)
    options = dict(initial_state=initial_state, return_state=return_state, forget_gate=forget_gate, eps=eps)
    return implementation(q, k, v, i, f, **options, chunk_size=chunk_size)
