"""One vector per sequence from a backbone's outputs at every position (classification of whole sequences), and the
features of a pair of pooled sequences (two-tower matching, the LRA's retrieval head)."""

import torch


def pool(hidden: torch.Tensor, inside: torch.Tensor, how: str) -> torch.Tensor:
    """(N, D) from hidden (N, S, D) over each sequence's positions ``inside`` (N, S) bool, which start at position
    0 and are contiguous: "mean" averages them, "last" takes the last (a causal backbone's summary of the whole
    sequence; padding after it does not reach it)."""
    if how == "mean":
        weights = inside.to(hidden.dtype)[:, :, None]  # (N, S, 1)
        return (hidden * weights).sum(1) / weights.sum(1).clamp_min(1)  # (N, D)
    if how == "last":
        last = (inside.sum(1) - 1).clamp_min(0)  # (N,)
        return hidden[torch.arange(len(hidden), device=hidden.device), last]  # (N, D)
    raise ValueError(f"pooling={how!r} is not valid; valid choices: ['mean', 'last']")


def pair_features(pooled: torch.Tensor) -> torch.Tensor:
    """(B, 4 D) features [x1, x2, x1 * x2, x1 - x2] of pooled pairs (B, 2, D) (the LRA's two-tower classifier)."""
    first, second = pooled[:, 0], pooled[:, 1]  # (B, D) each
    return torch.cat([first, second, first * second, first - second], dim=-1)
