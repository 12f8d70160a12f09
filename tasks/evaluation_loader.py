"""Validation and test loaders that score every sample exactly once, on one process or many.

Under data-parallel training Lightning gives an evaluation loader a ``DistributedSampler``, which pads the set with
repeated items until it splits evenly over the processes: a sample (or a batch, where the set is a list of batches)
is then scored twice and weighs twice in the metrics. Here each process takes every world_size-th item instead
(Lightning's ``UnrepeatedDistributedSampler``; Lightning keeps a loader's own distributed sampler), so the processes
run counts of items off by at most one; the metrics are torchmetrics states, summed over the processes. That is safe
under DDP because evaluation syncs buffers only before its first forward pass, as long as every process has an item:
a set with fewer items than processes is refused with the numbers.
"""

from lightning.pytorch.overrides.distributed import UnrepeatedDistributedSampler
from torch.utils.data import DataLoader, Dataset


def evaluation_loader(datamodule, dataset: Dataset, batch_size: int | None = None) -> DataLoader:
    """A loader over ``dataset`` (items: samples batched by ``batch_size``, or whole batches with None) that gives
    this process of ``datamodule``'s trainer its share, each item to one process."""
    trainer = getattr(datamodule, "trainer", None)
    world_size = 1 if trainer is None else trainer.world_size
    if world_size == 1:
        return DataLoader(dataset, batch_size=batch_size)
    items = len(dataset)
    if items < world_size:
        unit = "batches" if batch_size is None else "sequences"
        raise ValueError(
            f"an evaluation set of {items} {unit} cannot give each of {world_size} processes one; valid: "
            f"at least {world_size} (raise the task's validation or test samples)"
        )
    sampler = UnrepeatedDistributedSampler(dataset, num_replicas=world_size, rank=trainer.global_rank, shuffle=False)
    return DataLoader(dataset, batch_size=batch_size, sampler=sampler)
