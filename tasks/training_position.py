"""Where training stands when a datamodule builds its training loader: the contract between a resumable run and its
data.

Training data order is a function of (data seed, optimizer step), never of the number of processes: the global batch
of optimizer step s is fixed, and each data-parallel rank and each gradient-accumulation micro-batch takes its slice
of it. A resumed run builds its loader with the restored step and continues at the exact next sample. Lightning
restores ``trainer.global_step`` before it asks the datamodule for its training loader, so a datamodule reads the
position from its trainer at that moment.
"""

from dataclasses import dataclass


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

    @property
    def first_micro_batch(self) -> int:
        """The index of the first micro-batch this process loads, counting its micro-batches from step 0 (for a
        loader that numbers its batches and serves ``accumulation`` of them per optimizer step)."""
        return self.start_step * self.accumulation


def training_position(datamodule) -> TrainingPosition:
    """The position of ``datamodule``'s trainer (a Lightning datamodule attached to a fit), or step 0 of a single
    process without one (a datamodule used on its own)."""
    trainer = getattr(datamodule, "trainer", None)
    if trainer is None:
        return TrainingPosition()
    return TrainingPosition(start_step=trainer.global_step, rank=trainer.global_rank, world_size=trainer.world_size,
                            accumulation=trainer.accumulate_grad_batches)
