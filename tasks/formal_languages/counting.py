"""Counting tasks, the paper's extra "majority" group: majority and majority count.

Prompts are uniform random strings over the symbols "1".."63" (ids 1..63) followed directly by the answer.
"""

from __future__ import annotations

import abc
from collections import Counter

import numpy as np

from tasks.formal_languages.base import (
    PAD,
    FormalLanguageTask,
    assemble,
    length_mask,
    single_token_piece,
    symbol_tokens,
)


def symbol_counts(symbols: np.ndarray, lengths: np.ndarray, vocab_size: int) -> np.ndarray:
    """(N, vocab_size): how often each token id occurs in the first lengths[n] entries of row n."""
    rows, width = symbols.shape
    valid = length_mask(lengths, width)  # (N, W)
    slot = (np.arange(rows)[:, None] * vocab_size + symbols)[valid]  # flat (row, token) of each valid entry
    return np.bincount(slot, minlength=rows * vocab_size).reshape(rows, vocab_size)


class _CountingTask(FormalLanguageTask):
    """`w` over "1".."63"; answer one token computed from the symbol counts of w."""

    group = "counting"
    tokens = (PAD, *symbol_tokens(63))
    random_accuracy = 1 / (len(tokens) - 1)
    min_length = 2

    @abc.abstractmethod
    def _answer_ids(self, counts: np.ndarray) -> np.ndarray:
        """(N,) answer token ids from the symbol counts (N, |V|)."""

    def _sample(self, lengths, rng):
        prompt_lengths = lengths - 1
        symbols = rng.integers(1, len(self.tokens), size=(len(lengths), prompt_lengths.max()))  # (N, P)
        answers = self._answer_ids(symbol_counts(symbols, prompt_lengths, len(self.tokens)))  # (N,)
        return assemble(lengths.max(), [(symbols, prompt_lengths), single_token_piece(answers)], answer_piece=1)


class Majority(_CountingTask):
    """Answer the most frequent symbol; ties go to the smallest symbol (Listing 1: 1 7 6 4 3 8 1 7 2 -> 1,
    where 1 and 7 both occur twice)."""

    name = "majority"

    def answer(self, prompt: list[str]) -> list[str]:
        counts = Counter(prompt)
        highest = max(counts.values())
        return [min((symbol for symbol, count in counts.items() if count == highest), key=int)]

    def _answer_ids(self, counts):
        return np.argmax(counts, axis=1)  # the first (smallest) id among the most frequent


class MajorityCount(_CountingTask):
    """Answer the count c of the most frequent symbol as the token "c" (id c), "63" for c >= 63
    (Listing 1: 1 7 6 4 4 8 1 7 2 -> 2)."""

    name = "majority_count"

    def answer(self, prompt: list[str]) -> list[str]:
        return [str(min(max(Counter(prompt).values()), len(self.tokens) - 1))]

    def _answer_ids(self, counts):
        return np.minimum(counts.max(axis=1), len(self.tokens) - 1)
