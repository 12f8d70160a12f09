"""Nearest Neighbor Search samples (the xLSTM paper's Figure lstmProblems, left; Appendix B, "Nearest Neighbor Search
Task"), vectorised with numpy.

A sample of length L (uniform in [min_length, max_length]) holds L unit vectors x_0 .. x_{L-1} of d features, each
with a value v_t uniform in [0, 1); a position's input is the d + 1 numbers (x_t, v_t). x_0 is the search key, its
value v_0 is drawn but ignored. The target is the value of the vector nearest to the key among x_1 .. x_{L-1}:

    v_j,  j = argmin_{1 <= t < L} |x_t - x_0|  =  argmax_{1 <= t < L} <x_t, x_0>

(for unit vectors |x_t - x_0|^2 = 2 - 2 <x_t, x_0>, so the nearest neighbour is the most similar vector by cosine).
The paper: "a sequence is scanned sequentially for the most similar vector with the objective to return its attached
value at sequence end" (Figure lstmProblems) and "the model has to predict the value of the nearest neighbor so far
in the sequence" (Appendix B). We score the answer at the sequence end only: position L - 1. A causal model does not
know where a sequence ends, so its output at every position must be the answer so far; lengths vary so that every
prefix length is asked for.

Unit vectors are normalised standard normal draws (uniform on the sphere); ties have probability zero. A set is
stored padded to max_length with zeros after each sequence's end; `NNSSet.examples` lays out the rows a batch needs,
cut to their longest sequence.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tasks.nns.config import length_problems


@dataclass(frozen=True)
class NNSSet:
    """N samples, padded to the longest length M of the set."""

    vectors: np.ndarray  # (N, M, d) float32, unit norm before each sequence's end, zero after; [:, 0] the keys
    values: np.ndarray  # (N, M) float32 in [0, 1) before each sequence's end, zero after
    lengths: np.ndarray  # (N,) int64, each in [min_length, max_length]
    answers: np.ndarray  # (N,) float32: the value of the key's nearest neighbour

    def __len__(self) -> int:
        return len(self.lengths)

    def examples(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Model inputs (B, S, d + 1) float32 and targets (B, S) float32 of the samples ``rows``, S their longest
        length: inputs are (vector, value) before a sequence's end and zero after it; targets are NaN (not scored)
        except the answer at each sequence's last position."""
        lengths = self.lengths[rows]  # (B,)
        width = int(lengths.max())
        inputs = np.concatenate([self.vectors[rows, :width], self.values[rows, :width, None]], axis=2)  # (B, S, d+1)
        targets = np.full((len(rows), width), np.nan, dtype=np.float32)  # (B, S)
        targets[np.arange(len(rows)), lengths - 1] = self.answers[rows]
        return inputs, targets


def generate(vector_dim: int, min_length: int, max_length: int, samples: int, rng: np.random.Generator) -> NNSSet:
    """``samples`` NNS samples drawn from ``rng``; ValueError naming every bad value before anything is drawn."""
    problems = length_problems(min_length, max_length)
    for name, value, least in (
        ("vector_dim", vector_dim, 2),
        ("min_length", min_length, 2),
        ("max_length", max_length, 2),
        ("samples", samples, 1),
    ):
        if value < least:
            problems.append(f"{name}={value} must be >= {least}")
    if problems:
        raise ValueError("; ".join(problems))
    lengths = rng.integers(min_length, max_length + 1, size=samples)  # (N,)
    directions = rng.standard_normal((samples, max_length, vector_dim))  # (N, M, d)
    vectors = (directions / np.linalg.norm(directions, axis=2, keepdims=True)).astype(np.float32)  # (N, M, d)
    values = rng.random((samples, max_length), dtype=np.float32)  # (N, M)
    inside = np.arange(max_length) < lengths[:, None]  # (N, M)
    vectors *= inside[:, :, None]
    values *= inside
    similarity = np.einsum("nmd,nd->nm", vectors[:, 1:].astype(np.float64), vectors[:, 0].astype(np.float64))
    similarity[~inside[:, 1:]] = -np.inf  # (N, M - 1): candidates x_1 .. x_{L-1}
    nearest = 1 + similarity.argmax(axis=1)  # (N,)
    answers = values[np.arange(samples), nearest]  # (N,)
    return NNSSet(vectors, values, lengths, answers)
