"""MQAR data generation: our vectorised generator against a straightforward per-sample one, in the same run.

    python -m benchmarks.mqar_generation [--samples 100000] [--repeats 3]

Both produce every sample's model inputs and targets (L tokens each) in batches of 1024, the paper's largest setting
by default (CL 2048, KV 256, vocabulary 8192); ours draws the whole set at once (tasks.mqar.generate) and lays out
each batch, the peer draws and lays out one sample at a time with numpy's choice. The rows also run in
`python -m benchmarks.run --only mqar`.
"""

import argparse
from collections import deque
from collections.abc import Callable, Iterator
from functools import partial

import numpy as np
import pandas as pd

from benchmarks.comparison import Comparison
from benchmarks.timing import interleaved_medians
from tasks.mqar import generate
from tasks.spec import IGNORE_INDEX

VOCAB, CONTEXT, PAIRS, POWER_A, BATCH = 8192, 2048, 256, 0.01, 1024

Batch = tuple[np.ndarray, np.ndarray]  # inputs (B, L), targets (B, L)


def per_sample_example(
    rng: np.random.Generator, gap_probabilities: np.ndarray, random_fill: bool
) -> tuple[np.ndarray, np.ndarray]:
    """One sample's inputs and targets (L,) each, drawn the plain way (the peer; it lives in this benchmark only)."""
    half = VOCAB // 2
    keys = rng.choice(np.arange(1, half), PAIRS, replace=False)  # (KV,)
    values = rng.choice(np.arange(half, VOCAB), PAIRS, replace=False)  # (KV,)
    gaps = rng.choice(len(gap_probabilities), PAIRS, replace=False, p=gap_probabilities)  # (KV,)
    inputs = rng.integers(0, VOCAB, CONTEXT) if random_fill else np.zeros(CONTEXT, dtype=np.int64)  # (L,)
    inputs[0 : 2 * PAIRS : 2], inputs[1 : 2 * PAIRS : 2] = keys, values
    inputs[2 * PAIRS + 2 * gaps] = keys
    targets = np.full(CONTEXT, IGNORE_INDEX, dtype=np.int64)  # (L,)
    targets[2 * PAIRS + 2 * gaps] = values
    return inputs, targets


def per_sample_batches(samples: int, random_fill: bool) -> Iterator[Batch]:
    rng = np.random.default_rng(0)
    weights = np.arange(1, (CONTEXT - 2 * PAIRS) // 2 + 1, dtype=np.float64) ** (POWER_A - 1)
    for start in range(0, samples, BATCH):
        rows = [
            per_sample_example(rng, weights / weights.sum(), random_fill) for _ in range(min(BATCH, samples - start))
        ]
        yield np.stack([inputs for inputs, _ in rows]), np.stack([targets for _, targets in rows])


def vectorised_batches(samples: int, random_fill: bool) -> Iterator[Batch]:
    drawn = generate(
        VOCAB, CONTEXT, PAIRS, POWER_A, samples, np.random.default_rng(0), fill_seed=(0, 0, 4) if random_fill else None
    )
    for start in range(0, samples, BATCH):
        yield drawn.examples(np.arange(start, min(start + BATCH, samples)))


def produce_all(batches: Callable[[int, bool], Iterator[Batch]], samples: int, random_fill: bool) -> None:
    deque(batches(samples, random_fill), maxlen=0)


def comparisons(samples: int, repeats: int) -> list[Comparison]:
    """Milliseconds to produce ``samples`` samples, zero filling (the paper's) and random filling (zoology's)."""
    rows = []
    for fill in ("zero", "random"):
        random_fill = fill == "random"
        seconds = interleaved_medians(
            {
                "ours": partial(produce_all, vectorised_batches, samples, random_fill),
                "peer": partial(produce_all, per_sample_batches, samples, random_fill),
            },
            repeats,
            warmup=0,
        )
        rows.append(
            Comparison(
                f"mqar generation, {fill} fill",
                f"N={samples} CL={CONTEXT} KV={PAIRS} V={VOCAB}",
                "ms",
                seconds["ours"] * 1e3,
                "per-sample numpy",
                seconds["peer"] * 1e3,
            )
        )
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3, help="interleaved rounds (no warm-up round); medians")
    arguments = parser.parse_args(argv)
    print(
        pd.DataFrame([row.as_row() for row in comparisons(arguments.samples, arguments.repeats)]).to_string(index=False)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
