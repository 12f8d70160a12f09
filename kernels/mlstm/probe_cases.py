"""Probe cases of the mLSTM ops (``kernels.probe``): a tiny call per head dim, compared through a head-wise norm.

The chunkwise case runs 80 steps (two chunks of 64, the second ragged) from the empty state; the step case one
step from the empty state, forward only (the step kernels are for inference).
"""

from kernels.backends import ProbeCase, register_probe_case
from kernels.probe_inputs import first_output, seeded, weighted_headwise_norm

PROBE_STEPS = 80


def _chunkwise_inputs(shape_class, device, dtype):
    head_dim = shape_class["head_dim"]
    q, k, v, i, f = seeded(*[(1, 2, PROBE_STEPS, head_dim)] * 3, *[(1, 2, PROBE_STEPS)] * 2, device=device, dtype=dtype)
    f = (f + 3).detach().requires_grad_()  # forget gates near one, as the layer initialises them
    options = dict(
        initial_state=None, return_state=False, forget_gate="sigmoid", eps=1e-6, chunk_size=shape_class["chunk_size"]
    )
    return (q, k, v, i, f), options


def _step_inputs(shape_class, device, dtype):
    head_dim = shape_class["head_dim"]
    tensors = seeded(*[(1, 2, 1, head_dim)] * 3, *[(1, 2, 1)] * 2, device=device, dtype=dtype, requires_grad=False)
    return tuple(tensors), dict(state=None, forget_gate="sigmoid", eps=1e-6)


register_probe_case(
    "mlstm.chunkwise",
    ProbeCase(
        shape_class=lambda q, *args, chunk_size, **kwargs: (("head_dim", q.shape[-1]), ("chunk_size", chunk_size)),
        inputs=_chunkwise_inputs,
        loss=lambda result: weighted_headwise_norm(first_output(result)),
    ),
)
register_probe_case(
    "mlstm.step",
    ProbeCase(
        shape_class=lambda q, *args, **kwargs: (("head_dim", q.shape[-1]),),
        inputs=_step_inputs,
        loss=lambda result: weighted_headwise_norm(first_output(result)),
    ),
)
