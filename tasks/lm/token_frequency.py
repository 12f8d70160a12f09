"""Tokens by their frequency in the training data (the xLSTM paper's Figure lstmProblems, right: "the perplexity of
token prediction on Wikitext-103, in partitions of token frequency"): a bucket per range of training-set counts,
``edges`` their lower bounds (bucket i holds the tokens counted edges[i] to edges[i + 1] - 1 times in the training
tokens, the last one edges[-1] or more; a token counted fewer than edges[0] times is in none)."""

from __future__ import annotations

import numpy as np

NO_BUCKET = -1


def edges_problems(edges: list[int]) -> list[str]:
    """Why ``edges`` are not bucket bounds: they must be counts >= 0, strictly increasing, at least one."""
    if not edges:
        return ["frequency_edges=[] gives no bucket; give the counts at which buckets start, e.g. [0, 1, 10, 100]"]
    if any(not isinstance(edge, int) or edge < 0 for edge in edges) or any(b <= a for a, b in zip(edges, edges[1:])):
        return [f"frequency_edges={edges} must be strictly increasing counts >= 0, e.g. [0, 1, 10, 100]"]
    return []


def bucket_labels(edges: list[int]) -> tuple[str, ...]:
    """A name per bucket: ``lo-hi`` (counts lo to hi), ``lo`` for one count, ``lo+`` for the last."""
    upper = [edge - 1 for edge in edges[1:]]
    return tuple(f"{low}" if high == low else f"{low}-{high}" for low, high in zip(edges, upper)) + (f"{edges[-1]}+",)


def token_buckets(train_tokens: np.ndarray, edges: list[int], vocab_size: int) -> np.ndarray:
    """The bucket of every token id by its count in ``train_tokens``: (vocab_size,) int64, NO_BUCKET below
    edges[0]."""
    counts = np.bincount(np.asarray(train_tokens, dtype=np.int64), minlength=vocab_size)[:vocab_size]  # (V,)
    buckets = np.searchsorted(np.asarray(edges), counts, side="right") - 1  # (V,), -1 below the first edge
    return np.where(buckets >= 0, buckets, NO_BUCKET).astype(np.int64)
