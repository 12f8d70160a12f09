"""Backend ``"triton"`` of op ``"selective_scan"``: Mamba's selective scan as one Triton launch forward and one
backward.

Registered for CUDA devices where triton imports, below ``"mamba_ssm"`` (the authors' CUDA kernel, where installed)
and above ``"torch"``, behind the kernel probe (``kernels.probe``); triton itself is imported only when the backend
first runs, so importing ``kernels`` never needs it. Files: ``forward.py`` and ``backward.py`` (the kernels),
``chunk_math.py`` (the Triton functions they share), ``function.py`` (the autograd node, tiles, buffers),
``adapter.py`` (the op's signature, fallback to torch).

Design (that of mamba_ssm's CUDA kernel). One program per (block of BLOCK_D channels, batch row) owns the float32
state (BLOCK_D, N) of its channels and walks the whole sequence in chunks of CHUNK steps: it loads x, dt (CHUNK,
BLOCK_D) and B, C (CHUNK, N) of a chunk (one chunk ahead, so the loads overlap the work), forms the chunk's states
(CHUNK, BLOCK_D, N) in registers with an associative scan along the steps, writes y and carries the last state on;
nothing of size (B, S, DI, N) ever reaches memory. The backward walks the chunks from the last, recomputes each
chunk's states from the state entering it (written by the forward, or by a second run of the forward kernel in the
backward where keeping them would cost more memory than x and dt) and runs the adjoint recurrence back through the
chunk with a reversed scan. The compiler lays the tiles out with the steps in each thread's registers and the N
states across lanes, so the scans are sequential loops in registers (the work of the recurrence itself, not a
log-depth tree); the sums over N (y, the gradients of x and dt) are warp shuffles.

Tiles: ``function.choose_tiling``. The kernels have been compiled offline for sm_90a and sm_80 (no spills; see
tests/kernels/test_selective_scan_triton.py) but not yet run on a GPU: the tests marked gpu check them against the torch
backend at Mamba 125M's layer, and ``benchmarks/gpu_selective_scan.py`` times them against the torch backend and
mamba_ssm.
"""

import functools
import importlib.util

import torch

from kernels.backends import register
from kernels.selective_scan.triton.adapter import selective_scan_triton

__all__ = ["selective_scan_triton"]


@functools.cache
def _triton_present() -> bool:
    return importlib.util.find_spec("triton") is not None


def _available(device: torch.device) -> bool:
    return device.type == "cuda" and _triton_present()


# probed (kernels.probe): auto runs it only where it compiled and agreed with torch on the op's tiny case
register("selective_scan", "triton", selective_scan_triton, is_available=_available, priority=5, probed=True)
