"""Shared machinery of the formal-language tasks: vocabulary, ragged-array assembly, padding (numpy only).

A sample is one sequence `prompt + answer`, padded with [PAD] (id 0) to the batch width. The answer tokens
are what the model is scored on; in the model input they are replaced by [PAD] (Listing 1 of the paper:
"red tokens are evaluated for loss and accuracy metrics, but are padded for the input").

Array code works on ragged batches represented as a padded array plus a length per row:
`values (N, W)` with `lengths (N,)`, the row's entries beyond its length being meaningless.
"""

from __future__ import annotations

import abc

import numpy as np

from tasks.spec import TaskSpec

PAD = "[PAD]"
ACT = "[ACT]"

GROUPS = ("regular", "deterministic_context_free", "context_sensitive", "counting")

Piece = tuple[np.ndarray, np.ndarray]  # (values (N, W), lengths (N,)): one ragged part of a sequence


def symbol_tokens(count: int) -> tuple[str, ...]:
    """Plain symbols "1" .. "count"; placed right after [PAD] their id equals their number."""
    return tuple(str(number) for number in range(1, count + 1))


class FormalLanguageTask(abc.ABC):
    """A formal-language task: a vocabulary, a reference solver on strings and a vectorised sampler.

    Subclasses set the class attributes and implement `answer` (slow, obviously correct, on token strings)
    and `_sample` (vectorised, on token ids).
    """

    name: str
    group: str
    tokens: tuple[str, ...]  # index = token id; "[PAD]" at 0
    random_accuracy: float  # s_rand of the paper
    min_length: int  # shortest total sequence length (prompt + answer) the task can produce

    def __init__(self) -> None:
        if self.tokens[0] != PAD or len(set(self.tokens)) != len(self.tokens):
            raise ValueError(f"{self.name}: tokens must be distinct and start with {PAD}: {self.tokens}")
        if self.group not in GROUPS:
            raise ValueError(f"{self.name}: unknown group {self.group!r}; valid choices: {list(GROUPS)}")
        self.token_ids = {token: index for index, token in enumerate(self.tokens)}

    @property
    def vocab_size(self) -> int:
        return len(self.tokens)

    @property
    def spec(self) -> TaskSpec:
        return TaskSpec(
            name=self.name,
            input_kind="tokens",
            input_size=self.vocab_size,
            num_classes=self.vocab_size,
            random_accuracy=self.random_accuracy,
            group=self.group,
        )

    def encode(self, tokens: list[str]) -> np.ndarray:
        return np.array([self.token_ids[token] for token in tokens], dtype=np.int64)

    def decode(self, ids) -> list[str]:
        return [self.tokens[int(index)] for index in ids]

    @abc.abstractmethod
    def answer(self, prompt: list[str]) -> list[str]:
        """The answer tokens of a prompt (everything before the answer, separators included)."""

    def sample(self, lengths: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """N random sequences; sequence n is `lengths[n]` tokens long where the task allows, else shorter.

        Returns `sequences (N, max(lengths)) int64` (prompt and answer, padded with 0) and
        `answer_mask (N, max(lengths)) bool` (True at the answer tokens).
        """
        lengths = np.asarray(lengths, dtype=np.int64)
        if lengths.ndim != 1 or lengths.size == 0:
            raise ValueError(f"{self.name}: lengths must be a non-empty 1-D array, got shape {lengths.shape}")
        if lengths.min() < self.min_length:
            raise ValueError(
                f"{self.name}: length {lengths.min()} is too short; valid lengths are >= {self.min_length}"
            )
        return self._sample(lengths, rng)

    @abc.abstractmethod
    def _sample(self, lengths: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """`sample` on validated lengths."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, |V|={self.vocab_size})"


def length_mask(lengths: np.ndarray, width: int) -> np.ndarray:
    """(N, width) bool: True at the first lengths[n] positions of row n."""
    return np.arange(width)[None, :] < lengths[:, None]


def constant_piece(token_id: int, count: int) -> Piece:
    """One token (a separator such as [ACT] or "=") in each of `count` rows."""
    return np.full((count, 1), token_id, dtype=np.int64), np.ones(count, dtype=np.int64)


def single_token_piece(token_ids: np.ndarray) -> Piece:
    """One token per row, e.g. a one-token answer."""
    return token_ids.astype(np.int64)[:, None], np.ones(len(token_ids), dtype=np.int64)


def gather_rows(values: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """values[n, positions[n, j]] for every row n, positions clipped into range (for padding slots)."""
    positions = np.clip(positions, 0, values.shape[1] - 1)
    return np.take_along_axis(values, positions, axis=1)


def shuffled_positions(rng: np.random.Generator, lengths: np.ndarray, width: int) -> np.ndarray:
    """(N, width) indices: a random permutation of 0..lengths[n]-1 in front, the padding slots kept after."""
    keys = np.where(length_mask(lengths, width), rng.random((len(lengths), width)), 2.0)  # (N, W)
    return np.argsort(keys, axis=1, kind="stable")


def concatenate(width: int, pieces: list[Piece]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Concatenates ragged pieces row by row into (N, width) arrays padded with 0.

    Returns the values, the index of the piece each position comes from (-1 on padding) and the row lengths.
    """
    count = len(pieces[0][1])
    positions = np.arange(width)[None, :]  # (1, W)
    values = np.zeros((count, width), dtype=np.int64)  # (N, W)
    piece_index = np.full((count, width), -1, dtype=np.int64)  # (N, W)
    start = np.zeros(count, dtype=np.int64)  # (N,) where the current piece begins
    for index, (piece_values, piece_lengths) in enumerate(pieces):
        offset = positions - start[:, None]  # (N, W) position inside the piece
        inside = (offset >= 0) & (offset < piece_lengths[:, None])  # (N, W)
        values = np.where(inside, gather_rows(piece_values, offset), values)
        piece_index[inside] = index
        start = start + piece_lengths
    if start.max() > width:
        raise AssertionError(f"pieces of {start.max()} tokens exceed the width {width}")
    return values, piece_index, start


def assemble(width: int, pieces: list[Piece], answer_piece: int) -> tuple[np.ndarray, np.ndarray]:
    """Sequences (N, width) of the concatenated pieces and the mask of the positions of `pieces[answer_piece]`."""
    sequences, piece_index, _ = concatenate(width, pieces)
    return sequences, piece_index == answer_piece


class SymbolTransduction(FormalLanguageTask):
    """Prompt: n random symbols "1".."10" and [ACT]; answer: the same n symbols rearranged.

    Total length 2n + 1, so an even requested length ends with one [PAD]. Subclasses give the rearrangement
    twice: on strings (`rearrange`, the reference) and as gather positions (`source_positions`, vectorised).
    """

    tokens = (PAD, *symbol_tokens(10), ACT)
    random_accuracy = 1 / (len(tokens) - 2)
    min_length = 3

    def answer(self, prompt: list[str]) -> list[str]:
        if prompt[-1] != ACT:
            raise ValueError(f"{self.name}: prompt must end with {ACT}: {prompt}")
        return self.rearrange(prompt[:-1])

    @abc.abstractmethod
    def rearrange(self, symbols: list[str]) -> list[str]:
        """The answer for the prompt symbols (reference)."""

    @abc.abstractmethod
    def source_positions(self, counts: np.ndarray, width: int) -> np.ndarray:
        """(N, width): prompt position of answer token j of row n, for j < counts[n]."""

    def _sample(self, lengths, rng):
        rows = len(lengths)
        counts = (lengths - 1) // 2  # (N,) symbols per prompt
        width = counts.max()
        symbols = rng.integers(1, len(self.tokens) - 1, size=(rows, width))  # (N, n) ids of "1".."10"
        answers = gather_rows(symbols, self.source_positions(counts, width))  # (N, n)
        pieces = [(symbols, counts), constant_piece(self.token_ids[ACT], rows), (answers, counts)]
        return assemble(lengths.max(), pieces, answer_piece=2)
