"""Backend ``"triton"`` of ``"mlstm.chunkwise"``: our own Triton kernels (``function.ChunkwiseMLSTMTriton``)
behind the op's signature, registered for CUDA devices where triton is importable, behind the kernel probe.

Triton is imported only when the backend runs: importing the suite never needs it. Inputs the kernels cannot
take (a dtype other than float32, float16, bfloat16; q, k, v of different dtypes; a head dim above 512) run
on the torch backend instead, with one warning per reason.

``chunk_size``: the result does not depend on it (the chunkwise form is exact for any chunk size), so the
kernels round it down to a power of two within [16, 256] (and to no more than S needs) and use that as their
chunk; see ``tiling.kernel_chunk``.
"""

import functools
import importlib.util
import warnings

import torch

from kernels.backends import register, resolve
from kernels.mlstm.gates import MLSTMState
from kernels.mlstm.triton.tiling import MAX_HEAD_DIM, Tiling, choose_tiling

KERNEL_DTYPES = (torch.float32, torch.float16, torch.bfloat16)

_warned: set[str] = set()


@functools.cache
def triton_present() -> bool:
    return importlib.util.find_spec("triton") is not None


def _available(device: torch.device) -> bool:
    return device.type == "cuda" and triton_present()


def unsupported(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> str | None:
    """Why the kernels cannot run these inputs, or None if they can."""
    if q.dtype not in KERNEL_DTYPES:
        return f"dtype {q.dtype} (the Triton kernels support {[str(d) for d in KERNEL_DTYPES]})"
    if k.dtype != q.dtype or v.dtype != q.dtype:
        return f"q, k, v of different dtypes ({q.dtype}, {k.dtype}, {v.dtype})"
    if q.shape[-1] > MAX_HEAD_DIM:
        return f"head dim {q.shape[-1]} (the Triton kernels support head dims up to {MAX_HEAD_DIM})"
    return None


def saves_states(q: torch.Tensor, v: torch.Tensor, tiling: Tiling) -> bool:
    """Whether the forward keeps the states entering the chunks for the backward (else it runs their recurrence
    again): where they take at most twice the memory of q, k, v, i.e. for 16-bit inputs at L = 128 up to
    DH = 384 (DH^2 / L * 4 bytes per step and head against 3 DH * 2)."""
    state_bytes = q.shape[-1] * v.shape[-1] / tiling.chunk * 4  # per step and head, float32
    input_bytes = (2 * q.shape[-1] + v.shape[-1]) * q.element_size()
    return state_bytes <= 2 * input_bytes


def chunkwise_triton(
    q,
    k,
    v,
    i,
    f,
    *,
    initial_state,
    return_state,
    forget_gate,
    eps,
    chunk_size,
    tiling: Tiling | None = None,
    save_states: bool | None = None,
):
    """``"mlstm.chunkwise"`` on our Triton kernels; ``tiling`` and ``save_states`` override the choices (tests use
    small tiles and both ways of the backward)."""
    reason = unsupported(q, k, v)
    if reason is not None:
        if reason not in _warned:
            _warned.add(reason)
            warnings.warn(
                f"backend 'triton' cannot run mlstm.chunkwise with {reason}; using the torch backend",
                RuntimeWarning,
                stacklevel=2,
            )
        options = dict(initial_state=initial_state, return_state=return_state, forget_gate=forget_gate, eps=eps)
        return resolve("mlstm.chunkwise", "torch", q.device)(q, k, v, i, f, **options, chunk_size=chunk_size)
    from kernels.mlstm.triton.function import ChunkwiseMLSTMTriton

    B, NH, S, DHK = q.shape
    if tiling is None:
        tiling = choose_tiling(S, DHK, v.shape[-1], B * NH, chunk_size, q.device, q.dtype)
    if save_states is None:
        save_states = saves_states(q, v, tiling)
    C0, n0, m0 = initial_state if initial_state is not None else (None, None, None)
    h, C, n, m = ChunkwiseMLSTMTriton.apply(
        q, k, v, i, f, C0, n0, m0, forget_gate == "exp", float(eps), tiling, save_states
    )
    return (h, MLSTMState(C, n, m)) if return_state else h


# probed (kernels.probe): auto runs it only where it compiled and agreed with torch on the op's tiny case
register("mlstm.chunkwise", "triton", chunkwise_triton, is_available=_available, priority=5, probed=True)
