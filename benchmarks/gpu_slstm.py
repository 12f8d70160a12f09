"""One sLSTM layer's scan on a GPU: our Triton kernel against the compiled torch scan and FlashRNN, forward and
forward + backward.

    python -m benchmarks.gpu_slstm [--repeats N] [--head-dims 192 256] [--flashrnn-cuda]

The shape is the paper's 125M sLSTM layer, B 16, S 2048, 4 heads of 192 (and of 256, the 350M layer's), as
bf16-mixed training runs it: wx in bfloat16, R and b float32 parameters, under bfloat16 autocast; the backward is
that of sum(h * w) for a fixed random w. Each candidate runs in a child process of its own (a compiler can abort
the whole process, and torch.compile's caches stay apart), which times forward and forward + backward interleaved
(medians of --repeats rounds after a warm-up round that compiles) and prints one JSON line, with the norm of h as a
check that the candidates computed the same function. A candidate that fails is named with its last line and left
out of the rows.

Peers: ``torch_compile_cuda`` (``auto``'s choice before ours), and where ``flashrnn`` imports, FlashRNN 1.0.8's
``triton_fused`` sLSTM at power-of-two head dims (it asserts one), all inputs in bfloat16 (it requires R in the
input dtype), R transposed to its layout; ``--flashrnn-cuda`` adds its ``cuda_fused`` kernels, which compile CUDA
sources with nvcc on first use. FlashRNN clamps n at 1 (a no-op from the default state used here) and ignores the
gradient clip (none here): see kernels/slstm/triton/__init__.py.
"""

import argparse
import importlib.util
import json
import subprocess
import sys

import torch

from benchmarks.comparison import Comparison
from benchmarks.timing import interleaved_medians

BATCH, STEPS, HEADS = 16, 2048, 4
HEAD_DIMS = (192, 256)
OURS = "triton"
COMPILED = "torch_compile_cuda"
FLASHRNN_TRITON, FLASHRNN_CUDA = "flashrnn_triton_fused", "flashrnn_cuda_fused"
MODES = ("fwd", "fwd+bwd")
CHILD_TIMEOUT_SECONDS = 1800  # torch.compile, Triton and nvcc compile in the warm-up round
NORM_AGREEMENT = 1e-2  # relative difference of |h| between candidates above which the rows say so


def _require_cuda() -> None:
    if not torch.cuda.is_available():
        raise RuntimeError("benchmarks.gpu_slstm needs a CUDA device (torch.cuda.is_available() is False)")


def candidates(head_dim: int, flashrnn_cuda: bool = False) -> list[str]:
    """Ours first, then the peers that can run this head dim here."""
    names = [OURS, COMPILED]
    if importlib.util.find_spec("flashrnn") is not None:
        if head_dim & (head_dim - 1) == 0:
            names.append(FLASHRNN_TRITON)
        if flashrnn_cuda:
            names.append(FLASHRNN_CUDA)
    return names


def _inputs(head_dim: int):
    """wx (B, S, 4, NH, DH) bfloat16, R (4, NH, DH, DH) and b (4, NH, DH) float32, the loss weights (B, S, NH, DH)."""
    generator = torch.Generator().manual_seed(0)
    wx = torch.randn(BATCH, STEPS, 4, HEADS, head_dim, generator=generator)
    R = torch.randn(4, HEADS, head_dim, head_dim, generator=generator) / head_dim**0.5
    b = torch.randn(4, HEADS, head_dim, generator=generator)
    weight = torch.randn(BATCH, STEPS, HEADS, head_dim, generator=generator)
    return wx.cuda().bfloat16(), R.cuda(), b.cuda(), weight.cuda()


def _scan_function(name: str):
    """(wx, R, b) -> h (B, S, NH, DH) for candidate ``name``."""
    if name in (OURS, COMPILED):
        import kernels.slstm as slstm

        def ours_or_compiled(wx, R, b):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                return slstm.scan(wx, R, b, backend=name)

        return ours_or_compiled
    from flashrnn import flashrnn

    backend = {FLASHRNN_TRITON: "triton_fused", FLASHRNN_CUDA: "cuda_fused"}[name]

    def flashrnn_scan(wx, R, b):
        R_theirs = R.transpose(-1, -2).bfloat16()  # (4, NH, DH_out, DH_in)
        states, _ = flashrnn(wx, R_theirs, b.bfloat16(), function="slstm", backend=backend, dtype="bfloat16")
        return states[0]  # states (4: h, c, n, m, B, S, NH, DH)

    return flashrnn_scan


def child(name: str, head_dim: int, repeats: int) -> dict[str, float]:
    """In the child process: median seconds of candidate ``name`` per mode, and the norm of h."""
    _require_cuda()
    scan = _scan_function(name)
    wx, R, b, weight = _inputs(head_dim)
    leaves = [tensor.requires_grad_() for tensor in (wx, R, b)]

    def forward():
        with torch.no_grad():
            scan(*leaves)
        torch.cuda.synchronize()

    def forward_backward():
        for tensor in leaves:
            tensor.grad = None
        (scan(*leaves).float() * weight).sum().backward()
        torch.cuda.synchronize()

    times = interleaved_medians({"fwd": forward, "fwd+bwd": forward_backward}, repeats)
    with torch.no_grad():
        times["h_norm"] = scan(*leaves).float().norm().item()
    return times


def run_child(name: str, head_dim: int, repeats: int) -> dict[str, float] | str:
    """Candidate ``name`` timed in a child process: its result, or why it failed."""
    command = [
        sys.executable,
        "-m",
        "benchmarks.gpu_slstm",
        "--child",
        name,
        "--head-dims",
        str(head_dim),
        "--repeats",
        str(repeats),
    ]
    try:
        finished = subprocess.run(command, capture_output=True, text=True, timeout=CHILD_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        return f"no result in {CHILD_TIMEOUT_SECONDS} s"
    lines = finished.stdout.strip().splitlines()
    if finished.returncode != 0 or not lines:
        last = (finished.stderr.strip().splitlines() or ["(no output)"])[-1]
        return f"exit code {finished.returncode}: {last}"
    return json.loads(lines[-1])


def slstm_grid(repeats: int, head_dims=HEAD_DIMS, flashrnn_cuda: bool = False) -> list[Comparison]:
    """Ours against every peer that runs, per head dim and mode (ms; ratio = peer / ours)."""
    _require_cuda()
    rows = []
    for head_dim in head_dims:
        shape = f"B={BATCH} S={STEPS} NH={HEADS} DH={head_dim} bf16 autocast"
        results = {name: run_child(name, head_dim, repeats) for name in candidates(head_dim, flashrnn_cuda)}
        for name, result in results.items():
            if isinstance(result, str):
                print(f"gpu_slstm: {name} at DH={head_dim} failed: {result}", file=sys.stderr)
        ours = results[OURS]
        if isinstance(ours, str):
            continue
        for name, peer in results.items():
            if name == OURS or isinstance(peer, str):
                continue
            if abs(peer["h_norm"] - ours["h_norm"]) > NORM_AGREEMENT * ours["h_norm"]:
                print(
                    f"gpu_slstm: |h| of {name} ({peer['h_norm']:.6g}) differs from ours ({ours['h_norm']:.6g}) at "
                    f"DH={head_dim}",
                    file=sys.stderr,
                )
            rows += [
                Comparison(f"sLSTM scan {mode}", shape, "ms", ours[mode] * 1e3, name, peer[mode] * 1e3)
                for mode in MODES
            ]
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--head-dims", type=int, nargs="+", default=list(HEAD_DIMS))
    parser.add_argument("--flashrnn-cuda", action="store_true", help="also FlashRNN's cuda_fused (compiles with nvcc)")
    parser.add_argument("--child", choices=(OURS, COMPILED, FLASHRNN_TRITON, FLASHRNN_CUDA), help=argparse.SUPPRESS)
    arguments = parser.parse_args(argv)
    if arguments.child:
        print(json.dumps(child(arguments.child, arguments.head_dims[0], arguments.repeats)))
        return 0
    for row in slstm_grid(arguments.repeats, arguments.head_dims, arguments.flashrnn_cuda):
        print(row.as_row())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
