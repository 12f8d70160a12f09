"""Our Triton mLSTM kernels against TFLA, our torch backend and causal SDPA on CUDA: the grid of issue 32.

    python -m benchmarks.gpu_kernels [--repeats N]

B * S = 32,768 tokens at S 2048, 8192, 16384; head dims 128, 256, 384 with 4 heads; bfloat16; forward and forward
plus backward. Peers: TFLA (mlstm_kernels 2.0.6 ``chunkwise--triton_xl_chunk``, through our adapter
``kernels.mlstm.mlstm_kernels_backend``), our torch backend, and torch's ``scaled_dot_product_attention``
(causal). Every time row has ratio = peer time / ours (> 1: ours faster); TFLA's rows carry the issue's target
(>= 1.0 everywhere), SDPA's forward-and-backward rows at S >= 8192 too.

Each shape runs in a child process, the backends timed interleaved there (medians over the rounds): a compiler
that aborts takes down only its child. A failed child is run again backend by backend, TFLA retried with
DISABLE_LLVM_OPT=1 (Triton 3.6's LLVM aborts compiling TFLA without it); TFLA then runs in a child of its own,
the only one with that variable, so ours is never timed under it. A backend that still fails has no rows at that
shape, and the reason is printed to stderr.
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import torch

from benchmarks.comparison import Comparison
from benchmarks.timing import interleaved_medians

TOKENS, NH = 32_768, 4
LENGTHS = (2048, 8192, 16384)
HEAD_DIMS = (128, 256, 384)
MODES = ("fwd", "fwd+bwd")
CHUNK = 128  # both chunkwise kernels: TFLA's default chunk
BACKENDS = ("triton", "torch", "tfla", "sdpa")
PEER_NAMES = {
    "tfla": "TFLA (mlstm_kernels chunkwise--triton_xl_chunk)",
    "torch": "ours, torch backend",
    "sdpa": "SDPA (causal)",
}
SDPA_TARGET_FROM = 8192  # the issue: faster than SDPA at S >= 8192 (forward and backward)
REPOSITORY = Path(__file__).resolve().parents[1]
CHILD_TIMEOUT = 1800


def _inputs(S: int, DH: int):
    """q, k, v (B, NH, S, DH), gates i ~ N(0, 1) and f ~ 3 + N(0, 1) (B, NH, S), bfloat16 on CUDA, requiring grad,
    and an upstream gradient for h."""
    generator = torch.Generator(device="cuda").manual_seed(0)
    B = TOKENS // S

    def normal(*shape):
        return torch.randn(*shape, generator=generator, device="cuda", dtype=torch.bfloat16)

    q, k, v = (normal(B, NH, S, DH) for _ in range(3))
    i, f = normal(B, NH, S), 3 + normal(B, NH, S)
    return [x.requires_grad_() for x in (q, k, v, i, f)], normal(B, NH, S, DH)


def _function(backend: str):
    """(q, k, v, i, f) -> h of one backend."""
    if backend == "sdpa":
        return lambda q, k, v, i, f: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    if backend == "triton":
        from kernels.mlstm.triton.adapter import chunkwise_triton as chunkwise
    elif backend == "tfla":
        from kernels.mlstm.mlstm_kernels_backend import chunkwise_triton as chunkwise
    else:
        from kernels.mlstm.chunkwise import chunkwise as public_chunkwise

        def chunkwise(*args, **options):
            return public_chunkwise(*args, **options, backend="torch")

    options = dict(initial_state=None, return_state=False, forget_gate="sigmoid", eps=1e-6, chunk_size=CHUNK)
    return lambda q, k, v, i, f: chunkwise(q, k, v, i, f, **options)


def _run(function, inputs, upstream, mode: str):
    """A no-argument callable: one forward (without grad) or forward and backward, synchronised."""

    def forward():
        with torch.no_grad():
            function(*inputs)
        torch.cuda.synchronize()

    def forward_backward():
        for x in inputs:
            x.grad = None
        function(*inputs).backward(upstream)
        torch.cuda.synchronize()

    return forward if mode == "fwd" else forward_backward


def time_shape(S: int, DH: int, backends: list[str], repeats: int) -> dict[str, dict[str, float]]:
    """Median milliseconds per backend and mode at one shape, the backends interleaved (this process)."""
    inputs, upstream = _inputs(S, DH)
    times = {}
    for mode in MODES:
        candidates = {backend: _run(_function(backend), inputs, upstream, mode) for backend in backends}
        seconds = interleaved_medians(candidates, repeats)
        times[mode] = {backend: seconds[backend] * 1e3 for backend in backends}
    return times


def _child(S: int, DH: int, backends: list[str], repeats: int, tfla_switch: bool) -> tuple[dict | None, str]:
    """``time_shape`` in a child process; (times, "") or (None, why it failed)."""
    environment = {**os.environ, "PYTHONPATH": str(REPOSITORY)}
    if tfla_switch:
        environment["DISABLE_LLVM_OPT"] = "1"
    command = [
        sys.executable,
        "-m",
        "benchmarks.gpu_kernels",
        "--child",
        str(S),
        str(DH),
        ",".join(backends),
        str(repeats),
    ]
    try:
        process = subprocess.run(
            command, cwd=REPOSITORY, env=environment, capture_output=True, text=True, timeout=CHILD_TIMEOUT
        )
    except subprocess.TimeoutExpired:
        return None, f"timed out after {CHILD_TIMEOUT} s"
    if process.returncode != 0:
        last_line = (process.stderr.strip().splitlines() or ["no output"])[-1]
        how = f"signal {-process.returncode}" if process.returncode < 0 else f"exit {process.returncode}"
        return None, f"{how}: {last_line[:200]}"
    return json.loads(process.stdout.strip().splitlines()[-1]), ""


def _times_with_retries(S: int, DH: int, repeats: int) -> tuple[dict, dict[str, str]]:
    """Times of every backend that runs at this shape, and why the others did not."""
    times, _ = _child(S, DH, list(BACKENDS), repeats, tfla_switch=False)
    if times is not None:
        return times, {}
    failures, working, tfla_switch = {}, [], False
    for backend in BACKENDS:
        alone, why = _child(S, DH, [backend], 1, tfla_switch=False)
        if alone is None and backend == "tfla":
            alone, why_switched = _child(S, DH, [backend], 1, tfla_switch=True)
            tfla_switch = alone is not None
            why = f"{why}; with DISABLE_LLVM_OPT=1: {why_switched}"
        if alone is None:
            failures[backend] = why
        else:
            working.append(backend)
    groups = [[b for b in working if b != "tfla"], ["tfla"]] if tfla_switch else [working]
    times = {mode: {} for mode in MODES}
    for group in filter(None, groups):  # TFLA with the switch in a child of its own: ours never runs under it
        group_times, why = _child(S, DH, group, repeats, tfla_switch=group == ["tfla"])
        if group_times is None:
            raise RuntimeError(f"S={S} DH={DH}: {group} ran alone but failed together ({why})")
        for mode in MODES:
            times[mode].update(group_times[mode])
    return times, failures


def mlstm_kernel_grid(repeats: int = 5) -> list[Comparison]:
    """Ours (Triton) against TFLA, our torch backend and SDPA over the grid, bfloat16; one row per peer and mode.

    A backend that fails at a shape has no rows there (ours failing: none at all); the reason goes to stderr."""
    if not torch.cuda.is_available():
        raise RuntimeError("benchmarks.gpu_kernels needs a CUDA device (torch.cuda.is_available() is False)")
    rows = []
    for S in LENGTHS:
        for DH in HEAD_DIMS:
            times, failures = _times_with_retries(S, DH, repeats)
            shape = f"B={TOKENS // S} NH={NH} S={S} DH={DH}"
            for backend, why in failures.items():
                print(f"mLSTM kernel grid, {shape}: {backend} skipped ({why})", file=sys.stderr)
            if "triton" in failures:
                continue
            for mode in MODES:
                for peer in (p for p in PEER_NAMES if p not in failures):
                    sdpa_target = peer == "sdpa" and mode == "fwd+bwd" and S >= SDPA_TARGET_FROM
                    target = 1.0 if peer == "tfla" or sdpa_target else None
                    rows.append(
                        Comparison(
                            f"mLSTM chunkwise {mode}, bf16",
                            shape,
                            "ms",
                            times[mode]["triton"],
                            PEER_NAMES[peer],
                            times[mode][peer],
                            target,
                        )
                    )
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--child", nargs=4, metavar=("S", "DH", "BACKENDS", "REPEATS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        S, DH, backends, repeats = args.child
        print(json.dumps(time_shape(int(S), int(DH), backends.split(","), int(repeats))))
        return
    for row in mlstm_kernel_grid(args.repeats):
        print(row.as_row())


if __name__ == "__main__":
    main()
