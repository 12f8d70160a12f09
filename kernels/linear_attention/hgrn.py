"""HGRN's gated linear recurrence (Qin et al. 2023): elementwise, one decay per channel.

    h_t = exp(a_t) * h_{t-1} + x_t,    o_t = h_t

Each channel is a one-dimensional linear attention (q = k = 1, v = x), so the chunkwise core serves it
with the channels in the place of heads. Ops ``"hgrn"`` and ``"hgrn.step"`` in ``kernels.backends``.
"""

import torch

from kernels.backends import register, resolve
from kernels.linear_attention.checks import check_chunk_size, check_shape
from kernels.linear_attention.chunkwise import chunkwise_gated_attention


def hgrn_torch(x, log_forget, *, initial_state, return_state, chunk_size):
    v, log_decay = (t.transpose(1, 2)[..., None] for t in (x, log_forget))  # (B, D, S, 1)
    ones = torch.ones_like(v)  # q = k = 1
    start = None if initial_state is None else initial_state[..., None, None]  # (B, D, 1, 1)
    h, state = chunkwise_gated_attention(
        ones, ones, v, log_decay, initial_state=start, exclusive=False, chunk_size=chunk_size
    )
    h = h[..., 0].transpose(1, 2)  # (B, S, D)
    return (h, state[..., 0, 0]) if return_state else h


def hgrn_step_torch(x_t, log_forget_t, state):
    state = torch.exp(log_forget_t) * state + x_t  # (B, D)
    return state, state


register("hgrn", "torch", hgrn_torch)
register("hgrn.step", "torch", hgrn_step_torch)


def hgrn(
    x: torch.Tensor,
    log_forget: torch.Tensor,
    *,
    initial_state: torch.Tensor | None = None,
    return_state: bool = False,
    chunk_size: int = 8,
    backend: str = "auto",
):
    """Outputs h (B, S, D), plus the final state (B, D) if ``return_state``.

    Args:
        x: (B, S, D) inputs; log_forget: (B, S, D), log of the forget gate (<= 0).
        initial_state: (B, D) state before the first step; default zeros.
        chunk_size: steps per chunk of the torch backend, rounded down to a power of two.
        backend: ``"auto"``, ``"torch"`` or, on CUDA with flash-linear-attention installed, ``"fla"``.
    """
    if x.dim() != 3:
        raise ValueError(f"x must have shape (B, S, D); got {tuple(x.shape)}")
    check_shape("log_forget", log_forget, tuple(x.shape))
    if initial_state is not None:
        check_shape("initial_state", initial_state, (x.shape[0], x.shape[2]))
    check_chunk_size(chunk_size)
    implementation = resolve("hgrn", backend, x.device)
    return implementation(x, log_forget, initial_state=initial_state, return_state=return_state, chunk_size=chunk_size)


def hgrn_step(
    x_t: torch.Tensor, log_forget_t: torch.Tensor, state: torch.Tensor, *, backend: str = "auto"
) -> tuple[torch.Tensor, torch.Tensor]:
    """One step: x_t, log_forget_t, state (B, D) -> h_t (B, D), new state (the same tensor)."""
    if x_t.dim() != 2:
        raise ValueError(f"x_t must have shape (B, D); got {tuple(x_t.shape)}")
    check_shape("log_forget_t", log_forget_t, tuple(x_t.shape))
    check_shape("state", state, tuple(x_t.shape))
    return resolve("hgrn.step", backend, x_t.device)(x_t, log_forget_t, state)
