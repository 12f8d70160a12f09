"""Which training sequences each optimizer step reads, from (data seed, step) alone (tasks.training_position).

Flat position i = step * global_batch + j (j < global_batch) is sequence ``permutation(data_seed, epoch)[i % N]``
of the N training sequences, epoch = i // N: every epoch visits every sequence once, in its own seeded order, and
an epoch boundary may fall inside a global batch. The global batch is cut into world_size * accumulation equal
micro-batches, rank-major: rank r takes the r-th slice of global_batch / world_size sequences, and its
accumulation micro-batch a the a-th part of that slice. So the same step reads the same sequences on any number of
processes, and a run resumed at step k reads exactly what the uninterrupted run read from step k on.
"""

from __future__ import annotations

import numpy as np

from tasks.training_position import TrainingPosition


class TrainingOrder:
    """The global batches of a training set of ``sequences`` sequences."""

    def __init__(self, sequences: int, global_batch: int, data_seed: int) -> None:
        if sequences < 1:
            raise ValueError("the training set holds no sequence")
        self.sequences, self.global_batch, self.data_seed = sequences, global_batch, data_seed
        self._permutations: dict[int, np.ndarray] = {}

    def permutation(self, epoch: int) -> np.ndarray:
        """The order of epoch ``epoch`` (the two latest are kept: a global batch spans at most two epochs unless it
        is larger than the set)."""
        if epoch not in self._permutations:
            if len(self._permutations) >= 2:
                del self._permutations[min(self._permutations)]
            self._permutations[epoch] = np.random.default_rng([self.data_seed, epoch]).permutation(self.sequences)
        return self._permutations[epoch]

    def step_sequences(self, step: int) -> np.ndarray:
        """The sequences of optimizer step ``step``'s global batch, in order: (global_batch,)."""
        positions = step * self.global_batch + np.arange(self.global_batch, dtype=np.int64)  # (G,)
        epochs, offsets = np.divmod(positions, self.sequences)
        rows = np.empty(self.global_batch, dtype=np.int64)
        for epoch in np.unique(epochs):
            here = epochs == epoch
            rows[here] = self.permutation(int(epoch))[offsets[here]]
        return rows

    def micro_batches(self, step: int, position: TrainingPosition) -> list[np.ndarray]:
        """The sequences of ``position``'s rank at ``step``, one array per accumulation micro-batch."""
        return position.micro_batches(self.step_sequences(step))
