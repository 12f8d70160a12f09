"""Task families by name (a task config's ``family``): the torch-free schema of its config and its datamodule.

Adding a family touches its folder, its configs and one entry here.
"""

import importlib
from dataclasses import dataclass
from typing import Any

from tasks.formal_languages.config import FormalLanguageTaskConfig
from tasks.mqar.config import MQARTaskConfig
from tasks.nns.config import NNSTaskConfig


@dataclass(frozen=True)
class TaskFamily:
    """``config``: the dataclass schema of the family's task configs; ``datamodule``: ``module:function`` that
    builds its LightningDataModule from a config of that schema and the batch size (imported only to train)."""

    config: type
    datamodule: str

    def build_datamodule(self, task: dict[str, Any], batch_size: int):
        module, name = self.datamodule.split(":")
        return getattr(importlib.import_module(module), name)(self.config(**task), batch_size)


TASK_FAMILIES = {
    "formal_language": TaskFamily(FormalLanguageTaskConfig, "tasks.formal_languages.data:build_datamodule"),
    "mqar": TaskFamily(MQARTaskConfig, "tasks.mqar.data:build_datamodule"),
    "nns": TaskFamily(NNSTaskConfig, "tasks.nns.data:build_datamodule"),
}


def task_family(name: str) -> TaskFamily:
    if name not in TASK_FAMILIES:
        raise ValueError(f"unknown task family {name!r}; valid choices: {sorted(TASK_FAMILIES)}")
    return TASK_FAMILIES[name]
