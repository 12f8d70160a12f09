"""Lightning data for the formal-language tasks: endless seeded training batches, fixed validation/test sets.

Every model and every training seed of a run sees exactly the same data (the paper trains and evaluates all
models on the same samples): training batch b comes from `default_rng([data_seed, 0, b])`, the validation
and test sets from `default_rng([data_seed, 1])` and `default_rng([data_seed, 2])`.
"""

from __future__ import annotations

from collections.abc import Iterator

import lightning
import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset

from tasks.evaluation_loader import evaluation_loader
from tasks.formal_languages.base import FormalLanguageTask
from tasks.formal_languages.config import FormalLanguageTaskConfig
from tasks.formal_languages.registry import get_task
from tasks.spec import IGNORE_INDEX, TaskSpec
from tasks.training_position import TrainingPosition, micro_batch_size, training_position

TRAIN_STREAM, VALIDATION_STREAM, TEST_STREAM = 0, 1, 2  # second entry of the seed sequence

Batch = tuple[torch.Tensor, torch.Tensor]  # inputs (B, L) int64, targets (B, L) int64


def make_examples(
    task: FormalLanguageTask, lengths: np.ndarray, rng: np.random.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Model inputs and targets, both (N, max(lengths)) int64.

    inputs: the sequences with [PAD] at the answer positions; targets: the answer tokens at the answer
    positions and IGNORE_INDEX everywhere else.
    """
    sequences, answer_mask = task.sample(lengths, rng)  # (N, L), (N, L)
    inputs = np.where(answer_mask, 0, sequences)
    targets = np.where(answer_mask, sequences, IGNORE_INDEX)
    return torch.from_numpy(inputs), torch.from_numpy(targets)


def _random_lengths(rng: np.random.Generator, low: int, high: int, count: int) -> np.ndarray:
    """`count` lengths uniform in low..high (inclusive)."""
    return rng.integers(low, high + 1, size=count)


def _sequence_lengths(inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """(B,) tokens before the padding: prompt and answer (neither contains [PAD])."""
    return ((inputs != 0) | (targets != IGNORE_INDEX)).sum(dim=1)


def _cut_padding(inputs: torch.Tensor, targets: torch.Tensor) -> Batch:
    """The batch without the padding columns after its longest sequence."""
    width = int(_sequence_lengths(inputs, targets).max())
    return inputs[:, :width], targets[:, :width]


class TrainingBatches(IterableDataset):
    """Endless training batches from global batch ``position.start_step`` on (a resumed run's position); global
    batch b (of optimizer step b) has lengths uniform in min_length..max_length. Each is cut into ``position``'s
    micro-batches (tasks.training_position), so a step reads the same samples on any number of processes, and each
    micro-batch is padded to its longest sequence. Use with `DataLoader(dataset, batch_size=None)`."""

    def __init__(
        self,
        task: FormalLanguageTask,
        batch_size: int,
        max_length: int,
        data_seed: int,
        position: TrainingPosition = TrainingPosition(),
    ) -> None:
        micro_batch_size(batch_size, position)  # fails early when the global batch does not split
        self.task, self.batch_size, self.max_length, self.data_seed = task, batch_size, max_length, data_seed
        self.position = position

    def batch(self, index: int) -> Batch:
        """Global batch ``index``, padded to its longest sequence."""
        rng = np.random.default_rng([self.data_seed, TRAIN_STREAM, index])
        lengths = _random_lengths(rng, self.task.min_length, self.max_length, self.batch_size)
        return _cut_padding(*make_examples(self.task, lengths, rng))

    def __iter__(self) -> Iterator[Batch]:
        index = self.position.start_step
        while True:
            inputs, targets = self.batch(index)  # (B, L) each
            for micro_inputs, micro_targets in zip(
                self.position.micro_batches(inputs), self.position.micro_batches(targets)
            ):
                yield _cut_padding(micro_inputs, micro_targets)
            index += 1


def fixed_batches(
    task: FormalLanguageTask, samples: int, batch_size: int, min_length: int, max_length: int, seed: tuple[int, int]
) -> list[Batch]:
    """A fixed evaluation set: `samples` sequences with lengths uniform in min_length..max_length, sorted by
    length and cut into batches of `batch_size`, each padded to its own longest sequence."""
    rng = np.random.default_rng(list(seed))
    lengths = _random_lengths(rng, min_length, max_length, samples)
    inputs, targets = make_examples(task, lengths, rng)  # (S, max_length)
    order = torch.argsort(_sequence_lengths(inputs, targets), stable=True)
    return [_cut_padding(inputs[rows], targets[rows]) for rows in order.split(batch_size)]


class FormalLanguageDataModule(lightning.LightningDataModule):
    """Training on lengths min_length..train_max_length, validation and test on eval_min_length..eval_max_length.

    Batches are `(inputs, targets)`: inputs (B, L) with [PAD] at the answer positions, targets (B, L) with the
    answer tokens there and IGNORE_INDEX (-100) elsewhere.
    """

    def __init__(
        self,
        task_name: str,
        batch_size: int,
        train_max_length: int = 40,
        eval_min_length: int = 40,
        eval_max_length: int = 256,
        data_seed: int = 0,
        val_samples: int = 512,
        test_samples: int = 512,
        eval_batch_size: int | None = None,
    ) -> None:
        super().__init__()
        self.task = get_task(task_name)
        eval_batch_size = batch_size if eval_batch_size is None else eval_batch_size
        _check_at_least("batch_size", batch_size, 1)
        _check_at_least("eval_batch_size", eval_batch_size, 1)
        _check_at_least("val_samples", val_samples, 1)
        _check_at_least("test_samples", test_samples, 1)
        _check_at_least("data_seed", data_seed, 0)
        min_length = self.task.min_length
        _check_at_least("train_max_length", train_max_length, min_length, f"the shortest {task_name} sequence")
        _check_at_least("eval_min_length", eval_min_length, min_length, f"the shortest {task_name} sequence")
        _check_at_least("eval_max_length", eval_max_length, eval_min_length, "eval_min_length")
        self.batch_size, self.eval_batch_size = batch_size, eval_batch_size
        self.train_max_length, self.eval_min_length, self.eval_max_length = (
            train_max_length,
            eval_min_length,
            eval_max_length,
        )
        self.data_seed, self.val_samples, self.test_samples = data_seed, val_samples, test_samples
        self._val_batches: list[Batch] | None = None
        self._test_batches: list[Batch] | None = None

    @property
    def spec(self) -> TaskSpec:
        return self.task.spec

    def train_dataloader(self) -> DataLoader:
        """Training batches from the trainer's step on (its global_step, restored before Lightning asks for this
        loader when a run resumes)."""
        dataset = TrainingBatches(
            self.task, self.batch_size, self.train_max_length, self.data_seed, training_position(self)
        )
        return DataLoader(dataset, batch_size=None)

    def val_dataloader(self) -> DataLoader:
        if self._val_batches is None:
            self._val_batches = self._evaluation_batches(self.val_samples, VALIDATION_STREAM)
        return evaluation_loader(self, self._val_batches)

    def test_dataloader(self) -> DataLoader:
        if self._test_batches is None:
            self._test_batches = self._evaluation_batches(self.test_samples, TEST_STREAM)
        return evaluation_loader(self, self._test_batches)

    def _evaluation_batches(self, samples: int, stream: int) -> list[Batch]:
        return fixed_batches(
            self.task,
            samples,
            self.eval_batch_size,
            self.eval_min_length,
            self.eval_max_length,
            seed=(self.data_seed, stream),
        )


def _check_at_least(name: str, value: int, minimum: int, minimum_is: str = "") -> None:
    if value < minimum:
        bound = f"{minimum_is} ({minimum})" if minimum_is else str(minimum)
        raise ValueError(f"{name}={value} is out of range; it must be >= {bound}")


def build_datamodule(config: FormalLanguageTaskConfig, batch_size: int) -> FormalLanguageDataModule:
    """The datamodule of a run's task config (configs/task/*.yaml)."""
    return FormalLanguageDataModule(
        task_name=config.name,
        batch_size=batch_size,
        train_max_length=config.train_max_length,
        eval_min_length=config.eval_min_length,
        eval_max_length=config.eval_max_length,
        data_seed=config.data_seed,
        val_samples=config.val_samples,
        test_samples=config.test_samples,
    )
