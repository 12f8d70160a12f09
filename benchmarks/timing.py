"""Interleaved timing: candidates run in turn, round after round, so drifts of the machine hit all alike."""

import statistics
import time
from collections.abc import Callable


def interleaved_medians(
    candidates: dict[str, Callable[[], object]], repeats: int = 5, warmup: int = 1
) -> dict[str, float]:
    """Median wall-clock seconds of each candidate over ``repeats`` rounds, after ``warmup`` untimed rounds."""
    for _ in range(warmup):
        for run in candidates.values():
            run()
    samples: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(repeats):
        for name, run in candidates.items():
            start = time.perf_counter()
            run()
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(times) for name, times in samples.items()}
