"""Backend ``"triton"`` of ``"selective_scan"``: our arguments and results around the Triton kernels.

Inputs the kernels cannot take run on the torch backend instead, with one warning per reason: a tensor in a dtype
other than float32, bfloat16, float16 (float64, say), or a state dim N above 64 (the tiles hold all N states of
their channels in registers). ``auto`` picks this backend from the device alone, so a configuration that works on
CPU keeps working on GPU. ``chunk_size`` (the torch backend's knob) is passed on to the fallback only: the result
does not depend on it, and the kernels use their own tiles (``function.choose_tiling``). Results: y in x's dtype,
the final state (with ``return_state``) in x's dtype, as the torch backend returns them.
"""

import warnings

import torch

from kernels.selective_scan.chunked import selective_scan_chunked

KERNEL_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
MAX_STATE_DIM = 64

_warned: set[str] = set()


def unsupported(x, dt, A, B, C, D, initial_state) -> str | None:
    """Why the Triton kernels cannot run these inputs, or None if they can."""
    named = dict(x=x, dt=dt, A=A, B=B, C=C, D=D, initial_state=initial_state)
    for name, tensor in named.items():
        if tensor is not None and tensor.dtype not in KERNEL_DTYPES:
            return f"{name} in {tensor.dtype} (the Triton kernels take {[str(d) for d in KERNEL_DTYPES]})"
    if A.shape[1] > MAX_STATE_DIM:
        return f"state dim N = {A.shape[1]} (the Triton kernels take N up to {MAX_STATE_DIM})"
    return None


def selective_scan_triton(
    x, dt, A, B, C, D, *, initial_state, return_state, chunk_size, tiling=None, save_chunk_starts: bool | None = None
):
    """``selective_scan`` on validated inputs; ``tiling`` and ``save_chunk_starts`` override the choices of
    ``function`` (tests use small tiles and both ways of the backward)."""
    reason = unsupported(x, dt, A, B, C, D, initial_state)
    if reason is not None:
        if reason not in _warned:
            _warned.add(reason)
            warnings.warn(
                f"backend 'triton' cannot run selective_scan with {reason}; using the torch backend",
                RuntimeWarning,
                stacklevel=2,
            )
        return selective_scan_chunked(
            x, dt, A, B, C, D, initial_state=initial_state, return_state=return_state, chunk_size=chunk_size
        )
    from kernels.selective_scan.triton.function import SelectiveScanTriton, choose_tiling, saves_chunk_starts

    if tiling is None:
        tiling = choose_tiling(A.shape[1])
    if save_chunk_starts is None:
        save_chunk_starts = saves_chunk_starts(x, dt, A.shape[1], tiling)
    y, final_state = SelectiveScanTriton.apply(x, dt, A, B, C, D, initial_state, tiling, save_chunk_starts)
    return (y, final_state.to(x.dtype)) if return_state else y
