"""Context-sensitive tasks: bucket sort, missing duplicate, odds first, repetition, set.

Plain symbols are the tokens "1".."k" right after [PAD], so a symbol's id is its number (the examples of
Listing 1 never show a 0 outside the arithmetic tasks).
"""

from __future__ import annotations

import numpy as np

from tasks.formal_languages.base import (
    ACT,
    PAD,
    FormalLanguageTask,
    SymbolTransduction,
    assemble,
    constant_piece,
    gather_rows,
    length_mask,
    shuffled_positions,
    single_token_piece,
    symbol_tokens,
)


class BucketSort(FormalLanguageTask):
    """`w` over "1".."10"; answer w sorted (no [ACT], Listing 1: 1 4 8 6 1 1 1 4 6 8).

    Total length 2n, so an odd requested length ends with one [PAD].
    """

    name = "bucket_sort"
    group = "context_sensitive"
    tokens = (PAD, *symbol_tokens(10))
    random_accuracy = 1 / (len(tokens) - 1)
    min_length = 2

    def answer(self, prompt: list[str]) -> list[str]:
        return sorted(prompt, key=int)

    def _sample(self, lengths, rng):
        counts = lengths // 2  # (N,) symbols per prompt
        symbols = rng.integers(1, len(self.tokens), size=(len(lengths), counts.max()))  # (N, n)
        padding_last = np.where(length_mask(counts, symbols.shape[1]), symbols, len(self.tokens))  # (N, n)
        return assemble(lengths.max(), [(symbols, counts), (np.sort(padding_last, axis=1), counts)], answer_piece=1)


class MissingDuplicate(FormalLanguageTask):
    """`w w'` where w' is w with one symbol replaced by [MIS]; answer the replaced symbol.

    Symbols "1".."9"; as the paper says "one of the tokens is masked in the repetition", the [MIS] position
    is uniform over the second copy (Deletang et al. mask either copy). Total length 2n + 1, so an even
    requested length ends with one [PAD].
    """

    name = "missing_duplicate"
    group = "context_sensitive"
    tokens = (PAD, *symbol_tokens(9), "[MIS]")
    random_accuracy = 1 / (len(tokens) - 2)
    min_length = 3

    def answer(self, prompt: list[str]) -> list[str]:
        half = len(prompt) // 2
        original, copy = prompt[:half], prompt[half:]
        if (
            len(prompt) % 2
            or copy.count("[MIS]") != 1
            or any(kept not in (symbol, "[MIS]") for symbol, kept in zip(original, copy))
        ):
            raise ValueError(f"not a string followed by its copy with one [MIS]: {prompt}")
        return [original[copy.index("[MIS]")]]

    def _sample(self, lengths, rng):
        rows = len(lengths)
        counts = (lengths - 1) // 2  # (N,) symbols per copy
        symbols = rng.integers(1, len(self.tokens) - 1, size=(rows, counts.max()))  # (N, n)
        masked = rng.integers(0, counts)  # (N,) position of [MIS] in the copy
        copy = symbols.copy()
        copy[np.arange(rows), masked] = self.token_ids["[MIS]"]
        pieces = [(symbols, counts), (copy, counts), single_token_piece(symbols[np.arange(rows), masked])]
        return assemble(lengths.max(), pieces, answer_piece=2)


class OddsFirst(SymbolTransduction):
    """`t1 t2 t3 ... [ACT]`; answer t1 t3 t5 ... then t2 t4 ... (1-based indices, as Listing 1:
    2 7 3 2 6 9 [ACT] 2 3 6 7 2 9)."""

    name = "odds_first"
    group = "context_sensitive"

    def rearrange(self, symbols: list[str]) -> list[str]:
        return symbols[0::2] + symbols[1::2]

    def source_positions(self, counts, width):
        odd_count = (counts[:, None] + 1) // 2  # (N, 1) number of tokens at odd 1-based indices
        slot = np.arange(width)[None, :]  # (1, W)
        return np.where(slot < odd_count, 2 * slot, 2 * (slot - odd_count) + 1)


class Repetition(SymbolTransduction):
    """`w [ACT]`; answer w again (Listing 1: 2 4 8 6 2 [ACT] 2 4 8 6 2)."""

    name = "repetition"
    group = "context_sensitive"

    def rearrange(self, symbols: list[str]) -> list[str]:
        return list(symbols)

    def source_positions(self, counts, width):
        return np.broadcast_to(np.arange(width)[None, :], (len(counts), width))


def first_occurrences(values: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """(N, W) bool: True where values[n, j] (j < lengths[n]) does not occur earlier in row n."""
    valid = length_mask(lengths, values.shape[1])  # (N, W)
    keyed = np.where(valid, values, values.max() + 1)  # (N, W) padding forms its own, last group
    by_value = np.argsort(keyed, axis=1, kind="stable")  # (N, W) positions grouped by value, earliest first
    sorted_values = np.take_along_axis(keyed, by_value, axis=1)
    opens_group = np.concatenate(
        [np.ones((len(values), 1), dtype=bool), sorted_values[:, 1:] != sorted_values[:, :-1]], axis=1
    )  # (N, W)
    first = np.zeros_like(valid)
    np.put_along_axis(first, by_value, opens_group, axis=1)
    return first & valid


class OrderedSet(FormalLanguageTask):
    """`w [ACT]` over "1".."126"; answer the distinct symbols of w in order of first occurrence
    (Listing 1: 8 6 6 3 5 4 5 3 [ACT] 8 6 3 5 4).

    To give every sample exactly the requested length L = n + 1 + d (n prompt symbols, d distinct), d is drawn
    uniformly in 1..min(126, (L-1)//2); the prompt holds each of d random distinct symbols once plus n - d
    further draws from them, shuffled.
    """

    name = "set"
    group = "context_sensitive"
    tokens = (PAD, *symbol_tokens(126), ACT)
    random_accuracy = 1 / (len(tokens) - 2)
    min_length = 3

    def answer(self, prompt: list[str]) -> list[str]:
        if prompt[-1] != ACT:
            raise ValueError(f"prompt must end with {ACT}: {prompt}")
        return list(dict.fromkeys(prompt[:-1]))

    def _sample(self, lengths, rng):
        rows = len(lengths)
        symbol_count = len(self.tokens) - 2
        distinct_counts = rng.integers(1, np.minimum(symbol_count, (lengths - 1) // 2) + 1)  # (N,) d
        prompt_lengths = lengths - 1 - distinct_counts  # (N,) n >= d
        width = prompt_lengths.max()
        palette = 1 + np.argsort(rng.random((rows, symbol_count)), axis=1)[:, : distinct_counts.max()]  # (N, d)
        slot = np.arange(width)[None, :]  # (1, n)
        palette_index = np.where(
            slot < distinct_counts[:, None], slot, rng.integers(0, distinct_counts[:, None], size=(rows, width))
        )  # (N, n)
        prompt = gather_rows(gather_rows(palette, palette_index), shuffled_positions(rng, prompt_lengths, width))
        first_seen_first = np.argsort(~first_occurrences(prompt, prompt_lengths), axis=1, kind="stable")  # (N, n)
        pieces = [
            (prompt, prompt_lengths),
            constant_piece(self.token_ids[ACT], rows),
            (gather_rows(prompt, first_seen_first), distinct_counts),
        ]
        return assemble(lengths.max(), pieces, answer_piece=2)
