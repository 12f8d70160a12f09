"""The sets an LRA family serves: sequences with one class label each, laid out as batches by ``examples(rows)``.

Every target is a sequence-level class (TaskSpec output kind "sequence_class"): targets (B, S) hold the sequence's
label at each of its positions and IGNORE_INDEX at the padding after its end, so a batch says both the label and
which positions are the sequence's (the module pools over those). Token sequences are stored ragged (one flat array
and offsets: ListOps and AAN documents vary from tens to thousands of tokens) and padded per batch with token 0;
images are stored as uint8 pixels and served as normalised floats.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tasks.spec import IGNORE_INDEX

PADDING_TOKEN = 0  # token sets number their tokens from 1


def sequence_targets(labels: np.ndarray, lengths: np.ndarray, width: int) -> np.ndarray:
    """(B, width) int64: labels[b] at positions < lengths[b], IGNORE_INDEX after."""
    inside = np.arange(width) < lengths[:, None]  # (B, S)
    return np.where(inside, labels[:, None].astype(np.int64), IGNORE_INDEX)


@dataclass(frozen=True)
class RaggedTokens:
    """N token sequences: sequence i is tokens[offsets[i]:offsets[i + 1]], tokens >= 1."""

    tokens: np.ndarray  # (T,) unsigned ints
    offsets: np.ndarray  # (N + 1,) int64, offsets[0] == 0, non-decreasing

    @classmethod
    def from_sequences(cls, sequences: list[np.ndarray], dtype=np.uint16) -> RaggedTokens:
        lengths = np.array([len(sequence) for sequence in sequences], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        return cls(np.concatenate(sequences).astype(dtype), offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)  # (N,)

    def sequence_bytes(self) -> list[bytes]:
        """Each sequence's tokens as bytes (to tell sequences apart)."""
        return [self.tokens[start:end].tobytes() for start, end in zip(self.offsets[:-1], self.offsets[1:])]

    def padded(self, rows: np.ndarray, width: int | None = None) -> np.ndarray:
        """(B, S) int64 of the sequences ``rows``, padded with PADDING_TOKEN to S = width or their longest."""
        lengths = self.lengths[rows]  # (B,)
        width = int(lengths.max()) if width is None else width
        inside = np.arange(width) < lengths[:, None]  # (B, S)
        positions = self.offsets[rows][:, None] + np.arange(width)  # (B, S), past the end where not inside
        return np.where(inside, self.tokens[np.minimum(positions, len(self.tokens) - 1)], PADDING_TOKEN).astype(
            np.int64
        )


@dataclass(frozen=True)
class TokenSequenceSet:
    """Token sequences with one label each (ListOps)."""

    sequences: RaggedTokens
    labels: np.ndarray  # (N,) int64

    def __len__(self) -> int:
        return len(self.labels)

    def sequence_bytes(self) -> list[bytes]:
        return self.sequences.sequence_bytes()

    def examples(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Inputs (B, S) int64 padded with 0, S the longest of ``rows``; targets (B, S) int64."""
        inputs = self.sequences.padded(rows)
        return inputs, sequence_targets(self.labels[rows], self.sequences.lengths[rows], inputs.shape[1])


@dataclass(frozen=True)
class TokenPairSet:
    """Pairs of token sequences with one label per pair (AAN retrieval: do the two documents cite each other)."""

    first: RaggedTokens
    second: RaggedTokens
    labels: np.ndarray  # (N,) int64

    def __len__(self) -> int:
        return len(self.labels)

    def examples(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Inputs (B, 2, S) int64, both documents padded with 0 to S, the longest of either; targets (B, 2, S)
        int64, the pair's label at each document's positions and IGNORE_INDEX at its padding."""
        lengths = np.stack([self.first.lengths[rows], self.second.lengths[rows]], axis=1)  # (B, 2)
        width = int(lengths.max())
        inputs = np.stack([self.first.padded(rows, width), self.second.padded(rows, width)], axis=1)  # (B, 2, S)
        labels = np.repeat(self.labels[rows], 2)  # (2B,)
        targets = sequence_targets(labels, lengths.reshape(-1), width).reshape(len(rows), 2, width)  # (B, 2, S)
        return inputs, targets


@dataclass(frozen=True)
class PixelSequenceSet:
    """Images as pixel sequences with one label each: pixels (N, S, C) uint8 in row-major position order, served as
    (pixel / 255 - mean) / std per channel."""

    pixels: np.ndarray  # (N, S, C) uint8
    labels: np.ndarray  # (N,) int64
    mean: tuple[float, ...]  # (C,) of pixel / 255
    std: tuple[float, ...]  # (C,)

    def __len__(self) -> int:
        return len(self.labels)

    def examples(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Inputs (B, S, C) float32; targets (B, S) int64 (every position is the image's)."""
        pixels = self.pixels[rows].astype(np.float32) / 255  # (B, S, C)
        inputs = (pixels - np.float32(self.mean)) / np.float32(self.std)
        lengths = np.full(len(rows), pixels.shape[1])
        return inputs.astype(np.float32), sequence_targets(self.labels[rows], lengths, pixels.shape[1])
