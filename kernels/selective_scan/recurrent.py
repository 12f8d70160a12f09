"""Selective scan in recurrent form: one step of h_t = exp(dt_t A) h_{t-1} + dt_t x_t B_t, y_t = C_t h_t + D x_t."""

import torch

from kernels.backends import register


def selective_scan_step_torch(x_t, dt_t, A, B_t, C_t, D, state):
    """Torch backend of ``selective_scan_step`` on validated inputs."""
    decay = torch.exp(dt_t[..., None] * A)  # (B, DI, N)
    state = torch.addcmul(decay * state, (dt_t * x_t)[..., None], B_t[:, None, :])  # (B, DI, N)
    y_t = (state @ C_t[..., None]).squeeze(-1)  # (B, DI)
    if D is not None:
        y_t = y_t + x_t * D
    return y_t, state


register("selective_scan.step", "torch", selective_scan_step_torch)
