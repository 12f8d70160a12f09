"""Probe cases of the linear attention ops (``kernels.probe``): 80 steps of 2 heads from a zero state.

Decays are drawn as log decays <= 0 (log-sigmoid of a normal draw, RWKV-6's -exp of one, RetNet's fixed per-head
values); the loss is a fixed weighted sum of the outputs.
"""

import torch
from torch.nn.functional import logsigmoid

from kernels.backends import ProbeCase, register_probe_case
from kernels.probe_inputs import first_output, seeded, weighted_sum

PROBE_STEPS, PROBE_HEADS, HGRN_FEATURES = 80, 2, 32
SEQUENCE_OPTIONS = dict(initial_state=None, return_state=False, chunk_size=16)


def _leaf(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.detach().requires_grad_()


def _heads(shape_class) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Shapes (B, S, NH, DK) and (B, S, NH, DV) of a call of this class."""
    return (
        (1, PROBE_STEPS, PROBE_HEADS, shape_class["key_dim"]),
        (1, PROBE_STEPS, PROBE_HEADS, shape_class["value_dim"]),
    )


def _gla_inputs(shape_class, device, dtype):
    key_shape, value_shape = _heads(shape_class)
    q, k, v, decay = seeded(key_shape, key_shape, value_shape, key_shape, device=device, dtype=dtype)
    scale = shape_class["key_dim"] ** -0.5
    return (q, k, v, _leaf(logsigmoid(decay + 2))), dict(scale=scale, **SEQUENCE_OPTIONS)


def _retention_inputs(shape_class, device, dtype):
    key_shape, value_shape = _heads(shape_class)
    q, k, v, decay = seeded(key_shape, key_shape, value_shape, key_shape[:3], device=device, dtype=dtype)
    if shape_class["per_step_decay"]:
        log_decay = _leaf(logsigmoid(decay + 2))  # (B, S, NH)
    else:
        log_decay = torch.log(1 - 2.0 ** (-5 - torch.arange(PROBE_HEADS))).to(device=device, dtype=dtype)  # (NH,)
    scale = shape_class["key_dim"] ** -0.5
    return (q, k, v, log_decay), dict(scale=scale, **SEQUENCE_OPTIONS)


def _hgrn_inputs(shape_class, device, dtype):
    x, forget = seeded(*[(1, PROBE_STEPS, HGRN_FEATURES)] * 2, device=device, dtype=dtype)
    return (x, _leaf(logsigmoid(forget + 2))), SEQUENCE_OPTIONS


def _rwkv6_inputs(shape_class, device, dtype):
    key_shape, value_shape = _heads(shape_class)
    r, k, v, decay, bonus = seeded(
        key_shape, key_shape, value_shape, key_shape, key_shape[2:], device=device, dtype=dtype
    )
    return (r, k, v, _leaf(-torch.exp(decay - 1)), bonus), dict(scale=1.0, **SEQUENCE_OPTIONS)


def _dims(q, k, v, *args, **kwargs) -> tuple[tuple[str, int], ...]:
    return ("key_dim", q.shape[-1]), ("value_dim", v.shape[-1])


def _output_loss(result) -> torch.Tensor:
    return weighted_sum(first_output(result))


register_probe_case("gla", ProbeCase(_dims, _gla_inputs, _output_loss))
register_probe_case("rwkv6", ProbeCase(_dims, _rwkv6_inputs, _output_loss))
register_probe_case(
    "retention",
    ProbeCase(
        lambda q, k, v, log_decay, **kwargs: (*_dims(q, k, v), ("per_step_decay", int(log_decay.dim() > 1))),
        _retention_inputs,
        _output_loss,
    ),
)
register_probe_case("hgrn", ProbeCase(lambda *args, **kwargs: (), _hgrn_inputs, _output_loss))
