"""Learning-rate schedules: linear warm-up, then cosine decay to a floor."""

import math


def warmup_cosine_factor(step: int, *, max_steps: int, warmup_steps: int, min_lr_ratio: float) -> float:
    """Multiplier of the peak learning rate at ``step``: 0 -> 1 linearly over ``warmup_steps``, then a cosine from 1
    down to ``min_lr_ratio`` at ``max_steps`` (and flat after)."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    progress = min(1.0, (step - warmup_steps) / max(1, max_steps - warmup_steps))
    return min_lr_ratio + (1 - min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress))
