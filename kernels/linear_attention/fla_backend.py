"""Optional backend ``"fla"``: the Triton chunk kernels of flash-linear-attention (the paper's library).

Available only when ``fla`` imports and the tensors are on a CUDA device; imported lazily, so the suite
never needs the package. fla's layout (B, S, NH, D) and state layout (B, NH, DK, DV) are ours; its
``chunk_size`` is its own, so ours is ignored.
"""

import importlib.util

import torch

from kernels.backends import register


def _available(device: torch.device) -> bool:
    return device.type == "cuda" and importlib.util.find_spec("fla") is not None


def _result(o, final_state, return_state):
    return (o, final_state) if return_state else o


def gla_fla(q, k, v, log_decay, *, scale, initial_state, return_state, chunk_size):
    from fla.ops.gla import chunk_gla

    o, final_state = chunk_gla(
        q, k, v, log_decay, scale=scale, initial_state=initial_state, output_final_state=return_state
    )
    return _result(o, final_state, return_state)


def retention_fla(q, k, v, log_decay, *, scale, initial_state, return_state, chunk_size):
    from fla.ops.simple_gla import chunk_simple_gla

    decays = dict(g_gamma=log_decay) if log_decay.dim() == 1 else dict(g=log_decay)  # (NH,) or (B, S, NH)
    o, final_state = chunk_simple_gla(
        q, k, v, **decays, scale=scale, initial_state=initial_state, output_final_state=return_state
    )
    return _result(o, final_state, return_state)


def hgrn_fla(x, log_forget, *, initial_state, return_state, chunk_size):
    from fla.ops.hgrn import chunk_hgrn

    o, final_state = chunk_hgrn(x, log_forget, initial_state=initial_state, output_final_state=return_state)
    return _result(o, final_state, return_state)


def rwkv6_fla(r, k, v, log_decay, bonus, *, scale, initial_state, return_state, chunk_size):
    from fla.ops.rwkv6 import chunk_rwkv6

    o, final_state = chunk_rwkv6(
        r, k, v, log_decay, bonus, scale=scale, initial_state=initial_state, output_final_state=return_state
    )
    return _result(o, final_state, return_state)


for _op, _function in (("gla", gla_fla), ("retention", retention_fla), ("hgrn", hgrn_fla), ("rwkv6", rwkv6_fla)):
    register(
        _op,
        "fla",
        _function,
        is_available=_available,
        priority=10,
        probed=True,
        packages=("flash-linear-attention",),
        workarounds=({"DISABLE_LLVM_OPT": "1"},),
    )
