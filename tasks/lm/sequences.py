"""Token streams served as language-modelling samples: sequence k is tokens[k * C : k * C + C + 1] (C the context
length; consecutive sequences share one token), its inputs the first C tokens and its targets the last C, the next
token at every position. Sequences cross document boundaries; the end-of-text token between two documents is an
input like any other, and the first token of the next document its target."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch
from torch.utils.data import Dataset, IterableDataset

from tasks.lm.training_order import TrainingOrder
from tasks.training_position import TrainingPosition

Batch = tuple[torch.Tensor, torch.Tensor]  # inputs and targets, int64


class TokenWindows:
    """The sequences of a token stream, of ``context_length`` + 1 tokens at stride ``context_length``."""

    def __init__(self, tokens: np.ndarray, context_length: int) -> None:
        self.tokens, self.context_length = tokens, context_length

    def __len__(self) -> int:
        return max(len(self.tokens) - 1, 0) // self.context_length

    def samples(self, rows: np.ndarray) -> Batch:
        """Inputs and targets of sequences ``rows``: (B, C) each."""
        starts = np.asarray(rows, dtype=np.int64)[:, None] * self.context_length  # (B, 1)
        windows = self.tokens[starts + np.arange(self.context_length + 1)].astype(np.int64)  # (B, C + 1)
        windows = torch.from_numpy(windows)
        return windows[:, :-1], windows[:, 1:]


class TrainingBatches(IterableDataset):
    """Endless micro-batches of one process, from ``position``'s step on: per optimizer step its accumulation
    micro-batches in order (tasks.lm.training_order). Use with `DataLoader(dataset, batch_size=None)` and no
    workers (each worker would repeat the stream)."""

    def __init__(self, windows: TokenWindows, order: TrainingOrder, position: TrainingPosition) -> None:
        self.windows, self.order, self.position = windows, order, position

    def __iter__(self) -> Iterator[Batch]:
        step = self.position.start_step
        while True:
            for rows in self.order.micro_batches(step, self.position):
                yield self.windows.samples(rows)
            step += 1


class EvaluationSequences(Dataset):
    """The first ``count`` sequences of a token stream, one sample each: inputs and targets, (C,) each."""

    def __init__(self, windows: TokenWindows, count: int) -> None:
        if count > len(windows):
            raise ValueError(f"{count} sequences asked of a stream that holds {len(windows)}")
        self.windows, self.count = windows, count

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int) -> Batch:
        if not 0 <= index < self.count:
            raise IndexError(f"sequence {index} of {self.count}")
        inputs, targets = self.windows.samples(np.array([index]))
        return inputs[0], targets[0]


class BucketedSequences(Dataset):
    """Evaluation sequences with the bucket of each target token (tasks.lm.token_frequency): inputs, targets and
    their buckets, (C,) each."""

    def __init__(self, sequences: EvaluationSequences, buckets: np.ndarray) -> None:
        self.sequences, self.buckets = sequences, torch.from_numpy(buckets)  # buckets: (V,) int64

    def __len__(self) -> int:
        return len(self.sequences)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        inputs, targets = self.sequences[index]
        return inputs, targets, self.buckets[targets]
