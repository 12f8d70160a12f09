"""One Mamba layer's selective scan on a GPU: our Triton kernels against the torch backend and mamba_ssm, forward
and forward + backward.

    python -m benchmarks.gpu_selective_scan [--repeats N]

The shape is the 125M Mamba layer of the paper's language models as bf16-mixed training runs it: B 16, S 2048,
DI 1536 (expand 2 x 768), N 16; x, dt, B, C in bfloat16, A and D float32 parameters; the backward is that of
sum(y * w) for a fixed random w, reaching x, dt, A, B, C and D. Each candidate runs through the op
(``kernels.selective_scan.selective_scan(..., backend=name)``, the probe included, as the model calls it) in a
child process of its own (a compiler can abort the whole process), which times forward and forward + backward
interleaved (medians of --repeats rounds after a warm-up round that compiles) and prints one JSON line, with the
norm of y as a check that the candidates computed the same function. A candidate that fails is named with its last
line and left out of the rows. Peers: the torch backend (``auto``'s choice without mamba_ssm before ours) and, where
it imports, ``mamba_ssm`` (the authors' CUDA kernel).
"""

import argparse
import importlib.util
import json
import subprocess
import sys

import torch

from benchmarks.comparison import Comparison
from benchmarks.timing import interleaved_medians

BATCH, STEPS, INNER, STATE = 16, 2048, 1536, 16
OURS, TORCH, MAMBA_SSM = "triton", "torch", "mamba_ssm"
MODES = ("fwd", "fwd+bwd")
CHILD_TIMEOUT_SECONDS = 1800  # the probe and Triton compile in the warm-up round; the torch backend is slow
NORM_AGREEMENT = 1e-2  # relative difference of |y| between candidates above which the rows say so


def _require_cuda() -> None:
    if not torch.cuda.is_available():
        raise RuntimeError("benchmarks.gpu_selective_scan needs a CUDA device (torch.cuda.is_available() is False)")


def candidates() -> list[str]:
    """Ours first, then the peers that can run here."""
    return [OURS, TORCH] + ([MAMBA_SSM] if importlib.util.find_spec("mamba_ssm") is not None else [])


def _inputs():
    """x, dt (B, S, DI), B, C (B, S, N) bfloat16; A (DI, N), D (DI,) float32; the loss weights (B, S, DI)."""
    generator = torch.Generator().manual_seed(0)

    def normal(*shape):
        return torch.randn(*shape, generator=generator)

    x = normal(BATCH, STEPS, INNER)
    dt = torch.nn.functional.softplus(normal(BATCH, STEPS, INNER) - 4.0)  # about mamba_ssm's initial 0.001 to 0.1
    A = -torch.arange(1, STATE + 1, dtype=torch.float32).expand(INNER, STATE).contiguous()  # S4D-real, as Mamba's init
    B, C = normal(BATCH, STEPS, STATE), normal(BATCH, STEPS, STATE)
    D, weight = normal(INNER), normal(BATCH, STEPS, INNER)
    return [t.cuda().bfloat16() for t in (x, dt, B, C)] + [t.cuda() for t in (A, D, weight)]


def child(name: str, repeats: int) -> dict[str, float]:
    """In the child process: median seconds of candidate ``name`` per mode, and the norm of y."""
    _require_cuda()
    from kernels.selective_scan import selective_scan

    x, dt, B, C, A, D, weight = _inputs()
    leaves = [tensor.requires_grad_() for tensor in (x, dt, A, B, C, D)]

    def scan():
        x, dt, A, B, C, D = leaves
        return selective_scan(x, dt, A, B, C, D, backend=name)

    def forward():
        with torch.no_grad():
            scan()
        torch.cuda.synchronize()

    def forward_backward():
        for tensor in leaves:
            tensor.grad = None
        (scan().float() * weight).sum().backward()
        torch.cuda.synchronize()

    times = interleaved_medians({"fwd": forward, "fwd+bwd": forward_backward}, repeats)
    with torch.no_grad():
        times["y_norm"] = scan().float().norm().item()
    return times


def run_child(name: str, repeats: int) -> dict[str, float] | str:
    """Candidate ``name`` timed in a child process: its result, or why it failed."""
    command = [sys.executable, "-m", "benchmarks.gpu_selective_scan", "--child", name, "--repeats", str(repeats)]
    try:
        finished = subprocess.run(command, capture_output=True, text=True, timeout=CHILD_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        return f"no result in {CHILD_TIMEOUT_SECONDS} s"
    lines = finished.stdout.strip().splitlines()
    if finished.returncode != 0 or not lines:
        last = (finished.stderr.strip().splitlines() or ["(no output)"])[-1]
        return f"exit code {finished.returncode}: {last}"
    return json.loads(lines[-1])


def selective_scan_grid(repeats: int) -> list[Comparison]:
    """Ours against every peer that runs, per mode (ms; ratio = peer / ours)."""
    _require_cuda()
    shape = f"B={BATCH} S={STEPS} DI={INNER} N={STATE} bf16"
    results = {name: run_child(name, repeats) for name in candidates()}
    for name, result in results.items():
        if isinstance(result, str):
            print(f"gpu_selective_scan: {name} failed: {result}", file=sys.stderr)
    ours = results[OURS]
    if isinstance(ours, str):
        return []
    rows = []
    for name, peer in results.items():
        if name == OURS or isinstance(peer, str):
            continue
        if abs(peer["y_norm"] - ours["y_norm"]) > NORM_AGREEMENT * ours["y_norm"]:
            print(
                f"gpu_selective_scan: |y| of {name} ({peer['y_norm']:.6g}) differs from ours ({ours['y_norm']:.6g})",
                file=sys.stderr,
            )
        rows += [
            Comparison(f"selective scan {mode}", shape, "ms", ours[mode] * 1e3, name, peer[mode] * 1e3)
            for mode in MODES
        ]
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--child", choices=(OURS, TORCH, MAMBA_SSM), help=argparse.SUPPRESS)
    arguments = parser.parse_args(argv)
    if arguments.child:
        print(json.dumps(child(arguments.child, arguments.repeats)))
        return 0
    for row in selective_scan_grid(arguments.repeats):
        print(row.as_row())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
