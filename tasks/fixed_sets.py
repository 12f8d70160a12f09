"""Lightning data for a task with fixed training, validation and test sets (MQAR, NNS): the seeding of the sets
and of the training order, endless training epochs, evaluation batches.

Every model and every training seed of a run sees exactly the same data: the family draws its sets from
`default_rng([data_seed, stream])` with streams 0 (training), 1 (validation) and 2 (test), so the three never share
a seed; training epoch e visits the training set in the order `default_rng([data_seed, 3, e]).permutation`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

import lightning
import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset

from tasks.evaluation_loader import evaluation_loader
from tasks.training_position import TrainingPosition, micro_batch_size, training_position

TRAIN_STREAM, VALIDATION_STREAM, TEST_STREAM, TRAIN_ORDER_STREAM = 0, 1, 2, 3
SIZE_FIELDS = {TRAIN_STREAM: "train_samples", VALIDATION_STREAM: "val_samples", TEST_STREAM: "test_samples"}

Batch = tuple[torch.Tensor, torch.Tensor]  # inputs and targets, laid out by the family's set


class FixedSet(Protocol):
    def __len__(self) -> int: ...

    def examples(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Model inputs and targets of the samples ``rows`` (the batch's first dimension)."""


def as_batch(samples: FixedSet, rows: np.ndarray) -> Batch:
    inputs, targets = samples.examples(rows)
    return torch.from_numpy(inputs), torch.from_numpy(targets)


class TrainingBatches(IterableDataset):
    """Endless training batches from global batch ``position.start_step`` on (a resumed run's position), epoch after
    epoch, each epoch in its own seeded order; an epoch is the set's ``len // batch_size`` full global batches (the
    rest of the order is left out of that epoch). Each global batch is cut into ``position``'s micro-batches
    (tasks.training_position), so a step reads the same samples on any number of processes. Use with
    `DataLoader(dataset, batch_size=None)`."""

    def __init__(
        self, samples: FixedSet, batch_size: int, data_seed: int, position: TrainingPosition = TrainingPosition()
    ) -> None:
        if batch_size > len(samples):
            raise ValueError(
                f"batch_size={batch_size} is larger than the training set (train_samples="
                f"{len(samples)}); valid: batch_size <= {len(samples)}"
            )
        micro_batch_size(batch_size, position)  # fails early when the global batch does not split
        self.samples, self.batch_size, self.data_seed, self.position = samples, batch_size, data_seed, position

    def __iter__(self) -> Iterator[Batch]:
        batches_per_epoch = len(self.samples) // self.batch_size
        epoch, batch = divmod(self.position.start_step, batches_per_epoch)
        while True:
            order = np.random.default_rng([self.data_seed, TRAIN_ORDER_STREAM, epoch]).permutation(len(self.samples))
            for start in range(batch * self.batch_size, batches_per_epoch * self.batch_size, self.batch_size):
                for rows in self.position.micro_batches(order[start : start + self.batch_size]):
                    yield as_batch(self.samples, rows)
            epoch, batch = epoch + 1, 0


class FixedSetsDataModule(lightning.LightningDataModule):
    """A family's datamodule over its three fixed sets; the family gives ``fixed_set``. ``config`` has
    ``data_seed``, ``problems()`` and ``spec()``, and ``train_samples``, ``val_samples``, ``test_samples`` unless the
    family gives ``stream_set`` (a release's sets have the release's sizes)."""

    def __init__(self, config, batch_size: int) -> None:
        super().__init__()
        problems = config.problems()
        if problems:
            raise ValueError("; ".join(problems))
        self.config, self.batch_size = config, batch_size
        self._evaluation: dict[int, list[Batch]] = {}

    @property
    def spec(self):
        """The task's TaskSpec, as its config gives it."""
        return self.config.spec()

    def fixed_set(self, stream: int, samples: int) -> FixedSet:
        """The ``samples`` samples of ``stream``, drawn from `default_rng([config.data_seed, stream])`."""
        raise NotImplementedError

    def stream_set(self, stream: int) -> FixedSet:
        """The set of ``stream``: the config's ``<split>_samples`` samples of ``fixed_set``."""
        return self.fixed_set(stream, getattr(self.config, SIZE_FIELDS[stream]))

    def train_dataloader(self) -> DataLoader:
        """Training batches from the trainer's step on (its global_step, restored before Lightning asks for this
        loader when a run resumes)."""
        samples = self.stream_set(TRAIN_STREAM)
        return DataLoader(
            TrainingBatches(samples, self.batch_size, self.config.data_seed, training_position(self)), batch_size=None
        )

    def val_dataloader(self) -> DataLoader:
        return evaluation_loader(self, self._evaluation_batches(VALIDATION_STREAM))

    def test_dataloader(self) -> DataLoader:
        return evaluation_loader(self, self._evaluation_batches(TEST_STREAM))

    def _evaluation_batches(self, stream: int) -> list[Batch]:
        """The fixed set of ``stream`` in order, cut into batches of batch_size (built once per stream)."""
        if stream not in self._evaluation:
            fixed = self.stream_set(stream)
            samples = len(fixed)
            starts = range(0, samples, self.batch_size)
            self._evaluation[stream] = [
                as_batch(fixed, np.arange(start, min(start + self.batch_size, samples))) for start in starts
            ]
        return self._evaluation[stream]
