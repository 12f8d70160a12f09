"""Lightning data of the toy previous-token task (tests/toy_task.py): fixed sets, stream 0 training, 1 validation,
2 test, each from ``default_rng([data_seed, stream])``."""

import lightning
import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset

from tasks.spec import IGNORE_INDEX, TaskSpec
from tests.toy_task import PreviousTokenConfig

TRAIN_STREAM, VALIDATION_STREAM, TEST_STREAM = 0, 1, 2


def previous_token_set(config: PreviousTokenConfig, stream: int, samples: int) -> TensorDataset:
    """Inputs (N, length) int64; targets: the previous input token, IGNORE_INDEX at the first position."""
    rng = np.random.default_rng([config.data_seed, stream])
    inputs = rng.integers(1, config.vocab_size, size=(samples, config.length))
    targets = np.full_like(inputs, IGNORE_INDEX)
    targets[:, 1:] = inputs[:, :-1]
    return TensorDataset(torch.from_numpy(inputs), torch.from_numpy(targets))


class PreviousTokenDataModule(lightning.LightningDataModule):
    def __init__(self, config: PreviousTokenConfig, batch_size: int) -> None:
        super().__init__()
        self.config, self.batch_size = config, batch_size

    @property
    def spec(self) -> TaskSpec:
        return self.config.spec()

    def train_dataloader(self) -> DataLoader:
        return DataLoader(
            previous_token_set(self.config, TRAIN_STREAM, self.config.train_samples),
            batch_size=self.batch_size,
            shuffle=True,
        )

    def val_dataloader(self) -> DataLoader:
        return DataLoader(
            previous_token_set(self.config, VALIDATION_STREAM, self.config.val_samples), batch_size=self.batch_size
        )

    def test_dataloader(self) -> DataLoader:
        return DataLoader(
            previous_token_set(self.config, TEST_STREAM, self.config.test_samples), batch_size=self.batch_size
        )


def build_datamodule(config: PreviousTokenConfig, batch_size: int) -> PreviousTokenDataModule:
    return PreviousTokenDataModule(config, batch_size)
