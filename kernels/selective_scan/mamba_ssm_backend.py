"""Optional backend ``"mamba_ssm"``: the CUDA selective scan of the Mamba authors (package ``mamba-ssm``).

Available only when ``mamba_ssm`` imports and the tensors are on a CUDA device; imported lazily, so the
suite never needs the package. The kernel starts from a zero state: with an ``initial_state`` the call
goes to the torch backend.
"""

import importlib.util

import torch

from kernels.backends import register
from kernels.selective_scan.chunked import selective_scan_chunked


def _available(device: torch.device) -> bool:
    return device.type == "cuda" and importlib.util.find_spec("mamba_ssm") is not None


def selective_scan_mamba_ssm(x, dt, A, B, C, D, *, initial_state, return_state, chunk_size):
    if initial_state is not None:
        return selective_scan_chunked(
            x, dt, A, B, C, D, initial_state=initial_state, return_state=return_state, chunk_size=chunk_size
        )
    from mamba_ssm.ops.selective_scan_interface import selective_scan_fn

    result = selective_scan_fn(
        x.transpose(1, 2),  # (B, DI, S)
        dt.transpose(1, 2),  # (B, DI, S)
        A,
        B.transpose(1, 2),  # (B, N, S)
        C.transpose(1, 2),  # (B, N, S)
        D,
        return_last_state=return_state,
    )
    if return_state:
        y, final_state = result
        return y.transpose(1, 2), final_state  # (B, S, DI), (B, DI, N)
    return result.transpose(1, 2)  # (B, S, DI)


register(
    "selective_scan",
    "mamba_ssm",
    selective_scan_mamba_ssm,
    is_available=_available,
    priority=10,
    probed=True,
    packages=("mamba-ssm",),
)
