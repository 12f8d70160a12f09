"""In-place work-efficient (Blelloch) prefix scan of the linear recurrence ``h_t = a_t h_{t-1} + b_t``.

On (N, L, F) tensors with L a power of two: log2(L) up-sweep and log2(L) down-sweep levels, O(L)
work in all. Afterwards b holds the states from a zero start and a the products of the decays since
the start; run ``reverse`` the recurrence goes backwards in time (``h_t = a_t h_{t+1} + b_t``), as
the backward pass needs.
"""

import torch


def _combine_(a_into, b_into, a_from, b_from) -> None:
    """(a_into, b_into) <- (a_from, b_from) followed by (a_into, b_into), in place."""
    b_into.addcmul_(a_into, b_from)
    a_into.mul_(a_from)


def prefix_scan_(a: torch.Tensor, b: torch.Tensor, reverse: bool = False) -> None:
    """Scan (N, L, F) tensors a, b in place along dim 1; ``reverse`` mirrors every index i to L - 1 - i."""
    N, L, F = a.shape
    if L & (L - 1):
        raise ValueError(f"the scanned length must be a power of two; got {L}")
    span = 1
    while span < L:  # up-sweep: in each pair of adjacent spans the later one's last entry absorbs the earlier span
        pairs_a, pairs_b = a.view(N, L // (2 * span), 2 * span, F), b.view(N, L // (2 * span), 2 * span, F)
        last, earlier = (0, span) if reverse else (2 * span - 1, span - 1)
        _combine_(pairs_a[:, :, last], pairs_b[:, :, last], pairs_a[:, :, earlier], pairs_b[:, :, earlier])
        span *= 2
    span = L // 4
    while span >= 1:  # down-sweep: the middle of each block takes the prefix that ends where the block starts
        block, count = 2 * span, L // (2 * span) - 1
        first = span if reverse else block - 1
        blocks_a = a[:, first : first + count * block].view(N, count, block, F)
        blocks_b = b[:, first : first + count * block].view(N, count, block, F)
        middle, prefix_end = (0, span) if reverse else (span, 0)
        _combine_(
            blocks_a[:, :, middle], blocks_b[:, :, middle], blocks_a[:, :, prefix_end], blocks_b[:, :, prefix_end]
        )
        span //= 2
