"""Backend ``"triton"`` of op ``"slstm.scan"``: the sLSTM scan as one Triton launch forward and one backward.

Registered for CUDA devices where triton imports, above ``"torch_compile_cuda"``, behind the kernel probe
(``kernels.probe``); triton itself is imported only when the backend first runs, so importing ``kernels`` never needs
it. Files: ``forward.py`` and ``backward.py`` (the
kernels), ``gate_math.py`` (their shared elementwise functions), ``function.py`` (the autograd node, buffers, tile
sizes, the gradients of R and b), ``adapter.py`` (the op's signature, dtypes, fallback to torch).

Design. One program per (tile of 16 batch rows, head) runs all S steps; the state of its rows stays with it, and one
``tl.debug_barrier`` per step orders the step's writes before the next step's reads. The backward walks back through
time the same way. The recurrent matrix of a head, R (DH, 4 DH), is *not* kept on chip: at the paper's 125M head dim
192 it holds 147k values, 288 KiB in bfloat16, more than an SM's shared memory (228 KiB on H100/H200) or register
file (256 KiB). Each step instead reads R in BLOCK_D x BLOCK_D tiles per gate from L2, where the R of all heads stays
resident (1.2 MB at 4 heads of 192), with Triton's pipelined (cp.async) loads; the step costs the time to stream R
through one SM, a few microseconds, not FLOPs. Rejected: splitting the gates or the output dims of R across programs
that synchronise at every step (FlashRNN's CUDA kernels) needs a grid-wide barrier through global atomics, which
deadlocks unless every program is resident, has no Triton primitive, and cannot run under the interpreter (it runs
programs one after another), so it could not be tested here; R in bfloat16 shared memory fits head dims up to
about 128 only. Tiling both dims of R means any head dim works (tiles are masked), 12 and 192 alike.

Dtypes. The recurrent matmuls take their operands in the matmul dtype (the autocast dtype under autocast, else wx's:
float32, bfloat16 or float16; float64 falls back to torch) with float32 accumulation, float32 operands in full
precision ("ieee", not tf32); gate math, the states c, n, m and the carried gradients are float32. Results: h in the
matmul dtype, the final state in float32.

Memory. The forward keeps what the backward needs: c, n, m of every step (float32), h (matmul dtype) and, when a
gradient is needed, the pre-activations (float32): 30 bytes per (batch, step, feature) in bfloat16, 755 MB per layer
at B 16, S 2048, 768 features.

Why FlashRNN (NX-AI's ``flashrnn`` 1.0.8, a pure Python wheel on PyPI whose torch backends run on CPU) is not behind
this op. Its layouts are ours (gates i, f, z, o; wx (B, S, 4, NH, DH); b (4, NH, DH)) but for R, which is ours
transposed per head: its torch backend ``vanilla`` equals our scan (1.4e-7 in float32, from the default state). It
is not our function, though: (1) every backend clamps the normaliser, ``n_t = max(f' n + i', 1)``, which equals ours
from the default state (our n is >= 1 after the first step) but not from a given state with 0 < n < 1; (2) its
recurrent gradient clip is ignored by ``triton_fused``'s backward (the kernel takes the value and never uses it),
and the CUDA backends clip h in the forward to the same value and zero non-finite gradients; (3) the forget gate is
sigmoid only; (4) ``triton_fused`` asserts a power-of-two head dim and loads each gate's DH x DH block of R into
registers (its README: head dims up to 64), so neither 192 (125M) nor 384 (760M), and 256 or 512 beyond its register
budget, while ``cuda``/``cuda_fused`` compile CUDA sources with nvcc on first use; (5) ``triton_fused``'s backward
reads the per-step gradient of n from c's slot. An adapter would serve sigmoid, unclipped scans with power-of-two
head dims up to 64 only, small models whose sLSTM this kernel runs as well; ``benchmarks/gpu_slstm.py`` times it as
a peer.
"""

import functools
import importlib.util

import torch

from kernels.backends import register
from kernels.slstm.triton.adapter import scan_triton

__all__ = ["scan_triton"]


@functools.cache
def _triton_present() -> bool:
    return importlib.util.find_spec("triton") is not None


def _available(device: torch.device) -> bool:
    return device.type == "cuda" and _triton_present()


register("slstm.scan", "triton", scan_triton, is_available=_available, priority=20, probed=True)
