"""Probe case of the sLSTM scan (``kernels.probe``): 40 steps of 2 heads from the default state, per head dim.

wx arrives in the probed dtype (under autocast the layer's input projection is half precision) while R and b stay
float32, as the layer's parameters do.
"""

import torch

from kernels.backends import ProbeCase, register_probe_case
from kernels.probe_inputs import seeded, weighted_sum
from kernels.slstm.scan import initial_state

PROBE_STEPS, PROBE_HEADS = 40, 2


def _inputs(shape_class, device, dtype):
    head_dim = shape_class["head_dim"]
    (wx,) = seeded((1, PROBE_STEPS, 4, PROBE_HEADS, head_dim), device=device, dtype=dtype)
    R, b = seeded(
        (4, PROBE_HEADS, head_dim, head_dim), (4, PROBE_HEADS, head_dim), device=device, dtype=torch.float32, seed=1
    )
    R = (R / head_dim**0.5).detach().requires_grad_()
    state = initial_state(1, PROBE_HEADS, head_dim, dtype=torch.float32, device=device)
    return (wx, R, b, state, "sigmoid", None), {}


register_probe_case(
    "slstm.scan",
    ProbeCase(
        shape_class=lambda wx, *args, **kwargs: (("head_dim", wx.shape[-1]),),
        inputs=_inputs,
        loss=lambda result: weighted_sum(result[0]),
    ),
)
