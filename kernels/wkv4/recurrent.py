"""WKV of RWKV-4 in recurrent form, stabilised as in the reference kernels: one step at a time."""

import torch

from kernels.backends import register
from kernels.wkv4.state import WKV4State


def wkv4_step_torch(time_decay, time_first, k_t, v_t, state: WKV4State) -> tuple[torch.Tensor, WKV4State]:
    """Torch backend of ``wkv4_step``: k_t, v_t (B, C) -> wkv_t (B, C) and the state after step t."""
    weighted_values, weights, log_scale = state
    current = time_first + k_t  # (B, C): log weight of the current token in its own output
    scale = torch.maximum(log_scale, current).detach()
    past, now = torch.exp(log_scale - scale), torch.exp(current - scale)  # (B, C)
    wkv_t = (past * weighted_values + now * v_t) / (past * weights + now)  # (B, C)
    decayed = log_scale - torch.exp(time_decay)  # (B, C): log scale after one step of decay exp(-exp(time_decay))
    scale = torch.maximum(decayed, k_t).detach()
    past, now = torch.exp(decayed - scale), torch.exp(k_t - scale)  # (B, C)
    return wkv_t, WKV4State(past * weighted_values + now * v_t, past * weights + now, scale)


register("wkv4.step", "torch", wkv4_step_torch)
