"""The stabilised WKV state of RWKV-4 and the input checks of the wkv4 ops."""

from typing import NamedTuple

import torch

EMPTY_LOG_SCALE = -1e38  # the reference kernels' start value of the log scale: exp(-1e38 - x) = 0


class WKV4State(NamedTuple):
    """True state ``(sum_i e^{w_i} v_i, sum_i e^{w_i}) = exp(log_scale) * (weighted_values, weights)``; each (B, C)."""

    weighted_values: torch.Tensor
    weights: torch.Tensor
    log_scale: torch.Tensor


def initial_state(batch: int, channels: int, *, dtype=None, device=None) -> WKV4State:
    """The empty state before the first step: no values, no weights."""
    zeros = torch.zeros(batch, channels, dtype=dtype, device=device)  # (B, C)
    return WKV4State(zeros, zeros, torch.full_like(zeros, EMPTY_LOG_SCALE))


def check_inputs(time_decay, time_first, k, v, state) -> None:
    """Raise ValueError naming the offending shape unless k, v are (B, S, C) and time_decay, time_first (C,)."""
    if k.dim() != 3 or v.shape != k.shape:
        raise ValueError(f"k and v must share one shape (B, S, C); got k {tuple(k.shape)}, v {tuple(v.shape)}")
    batch, seq_len, channels = k.shape
    if seq_len < 1:
        raise ValueError(f"sequence length S must be at least 1; got k {tuple(k.shape)}")
    if time_decay.shape != (channels,) or time_first.shape != (channels,):
        raise ValueError(
            f"time_decay and time_first must have shape (C,) = {(channels,)}; "
            f"got {tuple(time_decay.shape)} and {tuple(time_first.shape)}"
        )
    if state is not None:
        shapes = [tuple(t.shape) for t in state]
        if shapes != [(batch, channels)] * 3:
            raise ValueError(
                f"state fields {WKV4State._fields} must each have shape (B, C) = {(batch, channels)}; got {shapes}"
            )
