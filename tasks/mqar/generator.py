"""MQAR samples (Arora et al. 2023, HazyResearch/zoology's `multiquery_ar`), vectorised with numpy.

A sample of length L with KV pairs over a vocabulary of V tokens:

    position   0   1   2   3  ...  2KV-2 2KV-1 | 2KV ...                                   L-1
    input      k1  v1  k2  v2 ...  kKV   vKV   | 0 .. k_i at 2KV + 2 g_i .. 0
    target     -100 everywhere, except v_i at 2KV + 2 g_i (the next token after k_i is v_i)

Keys are distinct tokens of [1, V//2), values distinct tokens of [V//2, V). The gaps g_1, g_2, ... are drawn one
after the other without replacement from the S = (L - 2KV) / 2 query slots [0, S), slot g with probability
proportional to (g + 1)^(a - 1) (a power law; a = 1 is uniform), as numpy's ``choice(replace=False, p=...)`` draws
them: g_1 follows the power law exactly, and the first keys of the prefix tend to be queried first. The positions
that are neither prefix nor query hold zero tokens, or with random filling uniform tokens of [0, V) from the
sample's own seeded generator.

A set is stored compactly (keys, values, gaps: (N, KV) each); `MQARSet.examples` lays out the rows a batch needs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tasks.mqar.config import layout_problems
from tasks.spec import IGNORE_INDEX

CHUNK = 8192  # samples drawn at once: bounds the memory of the (CHUNK, S) race times; part of the data's definition


@dataclass(frozen=True)
class MQARSet:
    """N samples; ``fill_seed`` None: zero filling; else sample i's filling comes from default_rng([*fill_seed, i])."""

    vocab_size: int
    context_length: int
    keys: np.ndarray  # (N, KV) distinct per row, in [1, V//2), prefix order
    values: np.ndarray  # (N, KV) distinct per row, in [V//2, V); values[:, i] belongs to keys[:, i]
    gaps: np.ndarray  # (N, KV) distinct per row, in [0, S); keys[:, i] is queried at 2KV + 2 gaps[:, i]
    fill_seed: tuple[int, ...] | None

    def __len__(self) -> int:
        return len(self.keys)

    def examples(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Model inputs and targets of the samples ``rows``, both (B, L) int64."""
        keys, values = self.keys[rows].astype(np.int64), self.values[rows].astype(np.int64)  # (B, KV)
        batch, pairs = keys.shape
        if self.fill_seed is None:
            inputs = np.zeros((batch, self.context_length), dtype=np.int64)
        else:
            inputs = np.stack(
                [
                    np.random.default_rng([*self.fill_seed, int(row)]).integers(
                        0, self.vocab_size, size=self.context_length
                    )
                    for row in rows
                ]
            )  # (B, L)
        inputs[:, 0 : 2 * pairs : 2] = keys
        inputs[:, 1 : 2 * pairs : 2] = values
        queries = 2 * pairs + 2 * self.gaps[rows].astype(np.int64)  # (B, KV)
        np.put_along_axis(inputs, queries, keys, axis=1)
        targets = np.full((batch, self.context_length), IGNORE_INDEX, dtype=np.int64)
        np.put_along_axis(targets, queries, values, axis=1)
        return inputs, targets


def generate(
    vocab_size: int,
    context_length: int,
    num_kv_pairs: int,
    power_a: float,
    samples: int,
    rng: np.random.Generator,
    fill_seed: tuple[int, ...] | None = None,
) -> MQARSet:
    """``samples`` MQAR samples drawn from ``rng``; ValueError naming every bad value before anything is drawn."""
    problems = layout_problems(vocab_size, context_length, num_kv_pairs)
    if not power_a > 0:
        problems.append(f"power_a={power_a} must be > 0")
    if samples < 1:
        problems.append(f"samples={samples} must be >= 1")
    if problems:
        raise ValueError("; ".join(problems))
    dtype = np.int16 if max(vocab_size, context_length) <= np.iinfo(np.int16).max else np.int32  # tokens, gaps < L
    half = vocab_size // 2
    slots = (context_length - 2 * num_kv_pairs) // 2
    keys, values, gaps = [], [], []
    for start in range(0, samples, CHUNK):
        rows = min(CHUNK, samples - start)
        keys.append(distinct_uniform(rng, 1, half, num_kv_pairs, rows).astype(dtype))
        values.append(distinct_uniform(rng, half, vocab_size, num_kv_pairs, rows).astype(dtype))
        gaps.append(power_law_gaps(rng, slots, num_kv_pairs, power_a, rows).astype(dtype))
    return MQARSet(
        vocab_size, context_length, np.concatenate(keys), np.concatenate(values), np.concatenate(gaps), fill_seed
    )


def distinct_uniform(rng: np.random.Generator, low: int, high: int, count: int, rows: int) -> np.ndarray:
    """(rows, count) int64 of [low, high), each row a uniformly random ordered draw without replacement.

    A row is the first ``count`` distinct values of a stream of uniform draws (a draw that repeats an earlier one
    is dropped). Each row gets enough draws that it falls short with probability ~1e-9 and is then drawn again:
    whether a row falls short does not depend on which values it drew, so redrawing keeps the rows uniform.
    """
    choices = high - low
    draws = _draws_for_distinct(choices, count)
    result = np.empty((rows, count), dtype=np.int64)
    pending = np.arange(rows)
    while pending.size:
        candidates = rng.integers(0, choices, size=(pending.size, draws))  # (P, M)
        first = _first_occurrences(candidates)  # (P, M)
        complete = first.sum(axis=1) >= count  # (P,)
        kept = first[complete] & (np.cumsum(first[complete], axis=1) <= count)  # (C, M), count True per row
        result[pending[complete]] = low + candidates[complete][kept].reshape(-1, count)
        pending = pending[~complete]
    return result


def _draws_for_distinct(choices: int, count: int) -> int:
    """Uniform draws from ``choices`` values that give ``count`` distinct ones except with probability ~1e-9: the
    coupon collector's mean plus six standard deviations."""
    mean = sum(choices / (choices - seen) for seen in range(count))
    variance = sum(choices * seen / (choices - seen) ** 2 for seen in range(count))
    return math.ceil(mean + 6 * math.sqrt(variance)) + 1


def _first_occurrences(candidates: np.ndarray) -> np.ndarray:
    """(P, M) bool: True where a row's value appears for the first time in that row."""
    width = candidates.shape[1]
    order = np.sort(candidates * width + np.arange(width), axis=1)  # (P, M) by value, then position
    positions = order % width  # (P, M)
    values = order // width  # (P, M)
    new = np.ones_like(values, dtype=bool)
    new[:, 1:] = values[:, 1:] != values[:, :-1]
    first = np.empty_like(new)
    np.put_along_axis(first, positions, new, axis=1)
    return first


def power_law_gaps(rng: np.random.Generator, slots: int, count: int, power_a: float, rows: int) -> np.ndarray:
    """(rows, count) int64: ``count`` distinct slots of [0, slots) per row, in the order successive sampling without
    replacement draws them, slot g with weight (g + 1)^(power_a - 1).

    An exponential race: slot g finishes at E_g / w_g with E_g ~ Exp(1), and the slots in order of finishing are
    successive weighted draws without replacement (the first finisher is g with probability w_g / sum(w); by
    memorylessness the rest race on among themselves).
    """
    inverse_weights = np.arange(1, slots + 1, dtype=np.float64) ** (1 - power_a)  # (S,) 1 / w_g
    finish = rng.standard_exponential((rows, slots)) * inverse_weights  # (R, S)
    winners = np.argpartition(finish, count - 1, axis=1)[:, :count]  # (R, KV), unordered
    order = np.argsort(np.take_along_axis(finish, winners, axis=1), axis=1)  # (R, KV)
    return np.take_along_axis(winners, order, axis=1)
