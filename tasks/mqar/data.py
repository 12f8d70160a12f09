"""Lightning data for MQAR: fixed training, validation and test sets (the paper: 100,000 training and 3,000
validation samples, 64 epochs), generated once per configuration and kept in the data cache.

Seeding and training order: tasks.fixed_sets (streams 0 training, 1 validation, 2 test, 3 training order). With
random filling, sample i of a stream fills its free positions from `default_rng([data_seed, stream, 4, i])`.
"""

from __future__ import annotations

import numpy as np

from tasks.data_cache import cached_arrays
from tasks.fixed_sets import FixedSetsDataModule
from tasks.mqar.config import MQARTaskConfig
from tasks.mqar.generator import MQARSet, generate

FILL_STREAM = 4  # third entry of a filling's seed sequence (after data_seed and the set's stream)
GENERATOR_VERSION = 1  # part of the cache key: bump it when the same configuration gives other samples


def mqar_set(config: MQARTaskConfig, stream: int, samples: int) -> MQARSet:
    """The ``samples`` samples of ``stream``, from the data cache or generated (and then cached)."""
    generating = {
        "task": "mqar",
        "version": GENERATOR_VERSION,
        "vocab_size": config.vocab_size,
        "context_length": config.context_length,
        "num_kv_pairs": config.num_kv_pairs,
        "power_a": config.power_a,
        "samples": samples,
        "seed": [config.data_seed, stream],
    }

    def draw() -> dict[str, np.ndarray]:
        drawn = generate(
            config.vocab_size,
            config.context_length,
            config.num_kv_pairs,
            config.power_a,
            samples,
            np.random.default_rng([config.data_seed, stream]),
        )
        return {"keys": drawn.keys, "values": drawn.values, "gaps": drawn.gaps}

    arrays = cached_arrays("mqar", generating, draw)
    fill_seed = (config.data_seed, stream, FILL_STREAM) if config.random_non_queries else None
    return MQARSet(
        config.vocab_size, config.context_length, arrays["keys"], arrays["values"], arrays["gaps"], fill_seed
    )


class MQARDataModule(FixedSetsDataModule):
    """Batches are `(inputs, targets)`, both (B, L) int64: targets hold the values at the query positions and
    IGNORE_INDEX (-100) elsewhere."""

    def fixed_set(self, stream: int, samples: int) -> MQARSet:
        return mqar_set(self.config, stream, samples)


def build_datamodule(config: MQARTaskConfig, batch_size: int) -> MQARDataModule:
    """The datamodule of a run's task config (configs/task/mqar.yaml)."""
    return MQARDataModule(config, batch_size)
