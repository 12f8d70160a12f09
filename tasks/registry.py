"""Task families by name (a task config's ``family``): the torch-free schema of its config, the task's spec and its
datamodule.

Adding a family touches its folder, its configs and one entry here. A family that lives elsewhere (a test's toy
family, a user's own task) is plugged in without an entry: ``XLSTM_SUITE_TASK_FAMILIES`` names, comma-separated,
``module:attribute`` entries, each an importable module's mapping of family name -> TaskFamily, e.g.
``XLSTM_SUITE_TASK_FAMILIES=tests.toy_task:TASK_FAMILIES``. Its task configs are found by Hydra through
``XLSTM_SUITE_CONFIGS`` (experiments.config.configuration). Sweep workers inherit both.
"""

import importlib
import os
import reprlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tasks.formal_languages.config import FormalLanguageTaskConfig
from tasks.lm.config import LMTaskConfig
from tasks.lra import ImageTaskConfig, ListOpsTaskConfig, PathfinderTaskConfig, RetrievalTaskConfig
from tasks.mqar.config import MQARTaskConfig
from tasks.nns.config import NNSTaskConfig
from tasks.spec import TaskSpec


@dataclass(frozen=True)
class TaskFamily:
    """``config``: the dataclass schema of the family's task configs, with ``problems()`` (checks across its fields,
    one message each) and ``spec()`` (the task's TaskSpec), both without torch; ``datamodule``: ``module:function``
    that builds its LightningDataModule from a config of that schema and the batch size (imported only to train);
    ``titles``: how reports print its tasks (task name -> the paper's spelling) where the name's words are not it."""

    config: type
    datamodule: str
    titles: Mapping[str, str] = field(default_factory=dict)

    def spec(self, task: dict[str, Any]) -> TaskSpec:
        """The TaskSpec of a task config of this family (a plain mapping), without torch."""
        return self.config(**task).spec()

    def build_datamodule(self, task: dict[str, Any], batch_size: int):
        module, name = self.datamodule.split(":")
        return getattr(importlib.import_module(module), name)(self.config(**task), batch_size)


TASK_FAMILIES = {
    "formal_language": TaskFamily(FormalLanguageTaskConfig, "tasks.formal_languages.data:build_datamodule"),
    "lm": TaskFamily(LMTaskConfig, "tasks.lm.data:build_datamodule"),
    "lra_image": TaskFamily(ImageTaskConfig, "tasks.lra.data:ImageDataModule",
                            {"lra_image_grey": "G-Image", "lra_image_rgb": "RGB-Image"}),
    "lra_listops": TaskFamily(ListOpsTaskConfig, "tasks.lra.data:ListOpsDataModule", {"lra_listops": "ListOps"}),
    "lra_pathfinder": TaskFamily(PathfinderTaskConfig, "tasks.lra.data:PathfinderDataModule",
                                 {"lra_pathfinder": "Pathfinder"}),
    "lra_retrieval": TaskFamily(RetrievalTaskConfig, "tasks.lra.data:RetrievalDataModule",
                                {"lra_retrieval": "Retrieval"}),
    "mqar": TaskFamily(MQARTaskConfig, "tasks.mqar.data:build_datamodule", {"mqar": "MQAR"}),
    "nns": TaskFamily(NNSTaskConfig, "tasks.nns.data:build_datamodule", {"nns": "NNS"}),
}


PLUG_INS_VARIABLE = "XLSTM_SUITE_TASK_FAMILIES"


def task_families() -> dict[str, TaskFamily]:
    """TASK_FAMILIES and the families plugged in through $XLSTM_SUITE_TASK_FAMILIES (read at every call)."""
    families = dict(TASK_FAMILIES)
    for entry in filter(None, (entry.strip() for entry in os.environ.get(PLUG_INS_VARIABLE, "").split(","))):
        for name, family in plugged_in(entry).items():
            if name in families:
                raise ValueError(f"{PLUG_INS_VARIABLE} entry {entry!r}: task family {name!r} is registered already")
            families[name] = family
    return families


def plugged_in(entry: str) -> dict[str, TaskFamily]:
    """The families of one ``module:attribute`` entry; ValueError naming the entry if it does not give them."""
    module_name, _, attribute = entry.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"{PLUG_INS_VARIABLE} entry {entry!r} is not module:attribute "
                         "(e.g. tests.toy_task:TASK_FAMILIES)")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ValueError(f"{PLUG_INS_VARIABLE} entry {entry!r}: cannot import {module_name!r} ({error})") from None
    if not hasattr(module, attribute):
        raise ValueError(f"{PLUG_INS_VARIABLE} entry {entry!r}: module {module_name!r} has no {attribute!r}")
    families = getattr(module, attribute)
    if not (isinstance(families, Mapping) and families
            and all(isinstance(name, str) and isinstance(family, TaskFamily) for name, family in families.items())):
        raise ValueError(f"{PLUG_INS_VARIABLE} entry {entry!r}: {attribute} must be a non-empty mapping of family "
                         f"name -> TaskFamily, not {reprlib.repr(families)}")
    return dict(families)


def task_family(name: str) -> TaskFamily:
    families = task_families()
    if name not in families:
        raise ValueError(f"unknown task family {name!r}; valid choices: {sorted(families)}")
    return families[name]


def task_spec(task: dict[str, Any]) -> TaskSpec:
    """The TaskSpec of a resolved task config (its ``family`` picks the family), without torch."""
    return task_family(task.get("family")).spec(task)


def task_title(name: str) -> str | None:
    """The paper's spelling of a task that a registered family titles ("lra_listops" -> "ListOps"), else None."""
    return next((family.titles[name] for family in task_families().values() if name in family.titles), None)
