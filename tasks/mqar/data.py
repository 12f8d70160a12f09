"""Lightning data for MQAR: fixed training, validation and test sets (the paper: 100,000 training and 3,000
validation samples, 64 epochs), generated once per configuration and kept in the data cache.

Every model and every training seed of a run sees exactly the same data: the sets come from
`default_rng([data_seed, stream])` with streams 0 (training), 1 (validation) and 2 (test), so the three never
share a seed; training epoch e visits the training set in the order `default_rng([data_seed, 3, e]).permutation`.
With random filling, sample i of a stream fills its free positions from `default_rng([data_seed, stream, 4, i])`.
"""

from __future__ import annotations

from collections.abc import Iterator

import lightning
import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset

from tasks.data_cache import cached_arrays
from tasks.mqar.config import MQARTaskConfig
from tasks.mqar.generator import MQARSet, generate
from tasks.spec import TaskSpec

TRAIN_STREAM, VALIDATION_STREAM, TEST_STREAM, TRAIN_ORDER_STREAM, FILL_STREAM = 0, 1, 2, 3, 4
GENERATOR_VERSION = 1  # part of the cache key: bump it when the same configuration gives other samples

Batch = tuple[torch.Tensor, torch.Tensor]  # inputs (B, L) int64, targets (B, L) int64


def mqar_set(config: MQARTaskConfig, stream: int, samples: int) -> MQARSet:
    """The ``samples`` samples of ``stream``, from the data cache or generated (and then cached)."""
    generating = {"task": "mqar", "version": GENERATOR_VERSION, "vocab_size": config.vocab_size,
                  "context_length": config.context_length, "num_kv_pairs": config.num_kv_pairs,
                  "power_a": config.power_a, "samples": samples, "seed": [config.data_seed, stream]}

    def draw() -> dict[str, np.ndarray]:
        drawn = generate(config.vocab_size, config.context_length, config.num_kv_pairs, config.power_a, samples,
                         np.random.default_rng([config.data_seed, stream]))
        return {"keys": drawn.keys, "values": drawn.values, "gaps": drawn.gaps}

    arrays = cached_arrays("mqar", generating, draw)
    fill_seed = (config.data_seed, stream, FILL_STREAM) if config.random_non_queries else None
    return MQARSet(config.vocab_size, config.context_length, arrays["keys"], arrays["values"], arrays["gaps"],
                   fill_seed)


def as_batch(samples: MQARSet, rows: np.ndarray) -> Batch:
    inputs, targets = samples.examples(rows)
    return torch.from_numpy(inputs), torch.from_numpy(targets)


class TrainingBatches(IterableDataset):
    """Endless training batches, epoch after epoch, each epoch in its own seeded order; an epoch is the set's
    ``len // batch_size`` full batches (the rest of the order is left out of that epoch). Use with
    `DataLoader(dataset, batch_size=None)`."""

    def __init__(self, samples: MQARSet, batch_size: int, data_seed: int) -> None:
        if batch_size > len(samples):
            raise ValueError(f"batch_size={batch_size} is larger than the training set (train_samples="
                             f"{len(samples)}); valid: batch_size <= {len(samples)}")
        self.samples, self.batch_size, self.data_seed = samples, batch_size, data_seed

    def __iter__(self) -> Iterator[Batch]:
        epoch = 0
        while True:
            order = np.random.default_rng([self.data_seed, TRAIN_ORDER_STREAM, epoch]).permutation(len(self.samples))
            for start in range(0, len(order) - self.batch_size + 1, self.batch_size):
                yield as_batch(self.samples, order[start:start + self.batch_size])
            epoch += 1


class MQARDataModule(lightning.LightningDataModule):
    """Batches are `(inputs, targets)`, both (B, L): targets hold the values at the query positions and
    IGNORE_INDEX (-100) elsewhere."""

    def __init__(self, config: MQARTaskConfig, batch_size: int) -> None:
        super().__init__()
        problems = config.problems()
        if problems:
            raise ValueError("; ".join(problems))
        self.config, self.batch_size = config, batch_size
        self._evaluation: dict[int, list[Batch]] = {}

    @property
    def spec(self) -> TaskSpec:
        return self.config.spec()

    def train_dataloader(self) -> DataLoader:
        samples = mqar_set(self.config, TRAIN_STREAM, self.config.train_samples)
        return DataLoader(TrainingBatches(samples, self.batch_size, self.config.data_seed), batch_size=None)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self._evaluation_batches(VALIDATION_STREAM, self.config.val_samples), batch_size=None)

    def test_dataloader(self) -> DataLoader:
        return DataLoader(self._evaluation_batches(TEST_STREAM, self.config.test_samples), batch_size=None)

    def _evaluation_batches(self, stream: int, samples: int) -> list[Batch]:
        """The fixed set of ``stream`` in order, cut into batches of batch_size (built once per stream)."""
        if stream not in self._evaluation:
            fixed = mqar_set(self.config, stream, samples)
            starts = range(0, samples, self.batch_size)
            self._evaluation[stream] = [as_batch(fixed, np.arange(start, min(start + self.batch_size, samples)))
                                        for start in starts]
        return self._evaluation[stream]


def build_datamodule(config: MQARTaskConfig, batch_size: int) -> MQARDataModule:
    """The datamodule of a run's task config (configs/task/mqar.yaml)."""
    return MQARDataModule(config, batch_size)
