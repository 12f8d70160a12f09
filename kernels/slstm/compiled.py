"""sLSTM scan with its per-step cell compiled by ``torch.compile`` (backends of op ``"slstm.scan"``).

The time loop stays in Python (compiling it would unroll S steps into one graph); the cell, one batched
matmul and the elementwise gate math of one step (about 15 small kernels in eager mode), is compiled once
per shape and reused, so that inductor can fuse the elementwise part. The math is ``kernels.slstm.scan.cell``.

Registered twice, because the registry decides availability by device alone:

- ``"torch_compile"``: everywhere, never picked by ``auto`` (priority below torch), so CPU runs are unchanged;
- ``"torch_compile_cuda"``: the same function, available on CUDA only, where ``auto`` picks it.

``backend="torch"`` switches compilation off on any device.
"""

import functools

import torch

from kernels.backends import register
from kernels.slstm.scan import SLSTMState, cell, scan_loop

COMPILERS = ("inductor", "aot_eager")


@functools.cache
def compiled_cell(compiler: str = "inductor"):
    """``cell`` under ``torch.compile`` with ``compiler``; built on first use, then shared by every call."""
    if compiler not in COMPILERS:
        raise ValueError(f"unknown compiler {compiler!r}; valid choices: {list(COMPILERS)}")
    return torch.compile(cell, backend=compiler)


def scan_compiled(
    wx: torch.Tensor,
    R: torch.Tensor,
    b: torch.Tensor,
    state: SLSTMState,
    forget_gate: str,
    recurrent_grad_clip: float | None,
    *,
    compiler: str = "inductor",
) -> tuple[torch.Tensor, SLSTMState]:
    """Same arguments and results as ``kernels.slstm.scan.scan_autograd``; the cell runs compiled by ``compiler``."""
    return scan_loop(wx, R, b, state, forget_gate, recurrent_grad_clip, step=compiled_cell(compiler))


def _on_cuda(device: torch.device) -> bool:
    return device.type == "cuda"


register("slstm.scan", "torch_compile", scan_compiled, priority=-1)
register("slstm.scan", "torch_compile_cuda", scan_compiled, is_available=_on_cuda, priority=10, probed=True)
