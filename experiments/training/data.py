"""The datamodule of a run's task, from its family in the task registry."""

import lightning as L
from omegaconf import DictConfig, OmegaConf

from tasks.registry import task_family


def build_datamodule(task: DictConfig, batch_size: int) -> L.LightningDataModule:
    return task_family(task.family).build_datamodule(OmegaConf.to_container(task, resolve=True), batch_size)
