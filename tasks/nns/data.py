"""Lightning data for Nearest Neighbor Search: fixed training, validation and test sets (the paper: 8192 training
and 8192 validation sequences), seeded and ordered as tasks.fixed_sets says.

The sets are drawn when the datamodule first needs them, not kept in the data cache: 8192 + 8192 sequences of up to
64 positions take 0.06 to 0.08 s to draw (one CPU core); reading them back from the cache took 0.015 s, a saving that
does not pay for 12 MB on disk per configuration.
"""

from __future__ import annotations

import numpy as np

from tasks.fixed_sets import FixedSetsDataModule
from tasks.nns.config import NNSTaskConfig
from tasks.nns.generator import NNSSet, generate


def nns_set(config: NNSTaskConfig, stream: int, samples: int) -> NNSSet:
    """The ``samples`` samples of ``stream``."""
    return generate(
        config.vector_dim,
        config.min_length,
        config.max_length,
        samples,
        np.random.default_rng([config.data_seed, stream]),
    )


class NNSDataModule(FixedSetsDataModule):
    """Batches are `(inputs, targets)`: inputs (B, S, d + 1) float32, the sequences padded with zeros after their
    end to the batch's longest S; targets (B, S) float32, the answer at each sequence's last position and NaN (not
    scored) elsewhere. A causal model's output at a sequence's last position does not see the padding after it."""

    def fixed_set(self, stream: int, samples: int) -> NNSSet:
        return nns_set(self.config, stream, samples)


def build_datamodule(config: NNSTaskConfig, batch_size: int) -> NNSDataModule:
    """The datamodule of a run's task config (configs/task/nns.yaml)."""
    return NNSDataModule(config, batch_size)
