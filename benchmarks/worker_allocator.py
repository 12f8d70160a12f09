"""The training workers' allocator: a language model's CPU training step with tcmalloc preloaded against the same
step with glibc's malloc, each in a fresh process (an allocator is chosen when a process starts), the two processes
taking turns so that both see the same machine.

The step is temp_sclaw300B's mini recipe for Llama at its largest size (batch 8, context 256, E 192, 4 blocks, the
GPT-2 vocabulary padded to 50,304) on one thread, as a worker of `--jobs 2` runs it: its logits and their gradient
are 412 MB each, which glibc maps from the kernel and unmaps again at every step
(experiments/sweeps/worker_allocator.py).

    python -m benchmarks.worker_allocator [--steps 6] [--turns 2]

The row also runs in `python -m benchmarks.run --only allocator`; it is skipped where tcmalloc is not installed.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

from benchmarks.comparison import Comparison
from experiments.paths import REPOSITORY_ROOT
from experiments.sweeps.worker_allocator import TCMALLOC_QUIET, tcmalloc_library

BATCH, CONTEXT, EMBEDDING, BLOCKS, VOCAB = 8, 256, 192, 4, 50304
SHAPE = f"Llama B={BATCH} S={CONTEXT} E={EMBEDDING} {BLOCKS} blocks V={VOCAB}, 1 thread"


def step_seconds(steps: int) -> list[float]:
    """Seconds of each of ``steps`` training steps after one warm-up step, in this process."""
    import torch

    from benchmarks.model_benchmarks import training_step
    from models.registry import build_language_model_from

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = build_language_model_from("llama", VOCAB, embedding_dim=EMBEDDING, num_blocks=BLOCKS)
    tokens = torch.randint(0, VOCAB, (BATCH, CONTEXT + 1), generator=torch.Generator().manual_seed(0))
    step = training_step(model, tokens)
    step()
    seconds = []
    for _ in range(steps):
        started = time.perf_counter()
        step()
        seconds.append(time.perf_counter() - started)
    return seconds


def child_seconds(preload: str | None, steps: int) -> list[float]:
    """step_seconds in a fresh process, with ``preload`` as its LD_PRELOAD (None: glibc's malloc)."""
    environment = {key: value for key, value in os.environ.items() if key != "LD_PRELOAD"}
    environment["PYTHONPATH"] = str(REPOSITORY_ROOT)
    if preload is not None:
        environment |= {"LD_PRELOAD": preload, **TCMALLOC_QUIET}
    finished = subprocess.run(
        [sys.executable, "-m", "benchmarks.worker_allocator", "--child", "--steps", str(steps)],
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    if finished.returncode != 0:
        raise RuntimeError(f"the allocator benchmark's child (LD_PRELOAD={preload}) failed:\n{finished.stderr}")
    return [float(value) for value in finished.stdout.split()]


def comparisons(steps: int = 6, turns: int = 2) -> list[Comparison]:
    """One row: ms per step with tcmalloc (ours) against glibc's malloc; none where tcmalloc is not installed."""
    library = tcmalloc_library()
    if library is None:
        print("allocator: tcmalloc is not installed (make tcmalloc); no row", file=sys.stderr)
        return []
    seconds = {"tcmalloc": [], "glibc": []}
    for _ in range(turns):
        seconds["tcmalloc"] += child_seconds(library, steps)
        seconds["glibc"] += child_seconds(None, steps)
    milliseconds = {name: 1000 * statistics.median(values) for name, values in seconds.items()}
    return [
        Comparison(
            "training step: tcmalloc against glibc malloc",
            SHAPE,
            "ms",
            milliseconds["tcmalloc"],
            "glibc malloc",
            milliseconds["glibc"],
        )
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=6, help="timed steps per process (after one warm-up step)")
    parser.add_argument("--turns", type=int, default=2, help="processes per allocator, taking turns")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args(argv)
    if arguments.child:
        print(" ".join(f"{value:.6f}" for value in step_seconds(arguments.steps)))
        return 0
    for row in comparisons(arguments.steps, arguments.turns):
        print(row.as_row())
    return 0


if __name__ == "__main__":
    sys.exit(main())
