"""Probe case of the selective scan (``kernels.probe``): 80 steps of 16 channels from a zero state, per state size."""

import torch
from torch.nn.functional import softplus

from kernels.backends import ProbeCase, register_probe_case
from kernels.probe_inputs import first_output, seeded, weighted_sum

PROBE_STEPS, PROBE_CHANNELS = 80, 16


def _inputs(shape_class, device, dtype):
    state_dim = shape_class["state_dim"]
    x, dt, A, B, C, D = seeded(
        (1, PROBE_STEPS, PROBE_CHANNELS),
        (1, PROBE_STEPS, PROBE_CHANNELS),
        (PROBE_CHANNELS, state_dim),
        (1, PROBE_STEPS, state_dim),
        (1, PROBE_STEPS, state_dim),
        (PROBE_CHANNELS,),
        device=device,
        dtype=dtype,
    )
    dt = softplus(dt - 2).detach().requires_grad_()  # positive step sizes
    A = (-torch.exp(A.float())).to(A.dtype).detach().requires_grad_()  # negative, as Mamba's -exp(A_log)
    return (x, dt, A, B, C, D), dict(initial_state=None, return_state=False, chunk_size=8)


register_probe_case(
    "selective_scan",
    ProbeCase(
        shape_class=lambda x, dt, A, *args, **kwargs: (("state_dim", A.shape[-1]),),
        inputs=_inputs,
        loss=lambda result: weighted_sum(first_output(result)),
    ),
)
