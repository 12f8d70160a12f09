"""Learning-rate schedules: linear warm-up, then cosine decay to a floor, optionally with warm restarts."""

import math


def warmup_cosine_factor(
    step: int, *, max_steps: int, warmup_steps: int, min_lr_ratio: float, restarts: int = 0
) -> float:
    """Multiplier of the peak learning rate at ``step``: 0 -> 1 linearly over ``warmup_steps``, then cosine decay
    from 1 down to ``min_lr_ratio`` at ``max_steps`` (and flat after).

    With ``restarts`` R > 0 (the paper's LRA "Linear Warm-up Cosine Annealing with Restarts", R = 3), the steps
    from ``warmup_steps`` to ``max_steps`` split into R + 1 cycles of equal length: each cycle is the same cosine
    from 1 to ``min_lr_ratio``, and at each of the R cycle boundaries the factor jumps back to 1 (a warm restart,
    SGDR, Loshchilov & Hutter 2017, with equal cycles). We read "R restarts" as R jumps back to the peak, so R + 1
    cycles; R = 0 is the single cosine. Within a cycle the factor equals torch's CosineAnnealingWarmRestarts with
    T_0 = the cycle length and T_mult = 1; the last cycle reaches the floor at ``max_steps`` and stays there."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    progress = (step - warmup_steps) / max(1, max_steps - warmup_steps)
    cycle_progress = 1.0 if progress >= 1 else (progress * (restarts + 1)) % 1.0
    return min_lr_ratio + (1 - min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * cycle_progress))
