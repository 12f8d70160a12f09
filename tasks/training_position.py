"""Where training stands when a datamodule builds its training loader: the contract between a resumable run and its
data.

Training data order is a function of (data seed, optimizer step), never of the number of processes: the global batch
of optimizer step s is fixed, and each data-parallel rank and each gradient-accumulation micro-batch takes its slice
of it. A resumed run builds its loader with the restored step and continues at the exact next sample. Lightning
restores ``trainer.global_step`` before it asks the datamodule for its training loader, so a datamodule reads the
position from its trainer at that moment.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class TrainingPosition:
    """start_step: optimizer steps already taken (0 for a fresh run); rank, world_size: this process among the
    data-parallel processes; accumulation: micro-batches per optimizer step and process."""

    start_step: int = 0
    rank: int = 0
    world_size: int = 1
    accumulation: int = 1

    def __post_init__(self) -> None:
        if self.start_step < 0 or self.world_size < 1 or self.accumulation < 1 or not 0 <= self.rank < self.world_size:
            raise ValueError(f"not a training position: {self}")

    @property
    def micro_batches_per_step(self) -> int:
        """Micro-batches that make up one global batch, over all processes."""
        return self.world_size * self.accumulation

    def micro_batches(self, global_batch: Sequence[T]) -> list[Sequence[T]]:
        """This process's micro-batches of one optimizer step's ``global_batch`` (rows, or a batch's samples along its
        first dimension), one per accumulation step, rank-major: rank r takes the r-th of world_size equal slices and
        its accumulation step a the a-th part of that slice. One process without accumulation takes it whole."""
        micro = micro_batch_size(len(global_batch), self)
        mine = global_batch[self.rank * micro * self.accumulation :][: micro * self.accumulation]
        return [mine[index * micro : (index + 1) * micro] for index in range(self.accumulation)]


def micro_batch_size(global_batch: int, position: TrainingPosition) -> int:
    """The samples of one micro-batch; ValueError if the global batch does not split evenly."""
    parts = position.micro_batches_per_step
    if global_batch % parts:
        raise ValueError(
            f"the global batch size {global_batch} does not split into world_size "
            f"{position.world_size} x accumulation {position.accumulation} = {parts} equal micro-batches; "
            f"valid: a global batch size divisible by {parts}"
        )
    return global_batch // parts


def training_position(datamodule) -> TrainingPosition:
    """The position of ``datamodule``'s trainer (a Lightning datamodule attached to a fit), or step 0 of a single
    process without one (a datamodule used on its own)."""
    trainer = getattr(datamodule, "trainer", None)
    if trainer is None:
        return TrainingPosition()
    return TrainingPosition(
        start_step=trainer.global_step,
        rank=trainer.global_rank,
        world_size=trainer.world_size,
        accumulation=trainer.accumulate_grad_batches,
    )
