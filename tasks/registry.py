"""Task families by name (a task config's ``family``): the torch-free schema of its config, the task's spec, its
datamodule and, for families of text, the validation sequences a language model is evaluated on; and ``TEXT``
(tasks.text), what the suite's language-model evaluations read.

Adding a family touches its folder, its configs and one entry here. A family that lives elsewhere (a test's toy
family, a user's own task) is plugged in without an entry, by an installed package's entry point of the group
``xlstm_suite.task_families`` or by ``XLSTM_SUITE_TASK_FAMILIES``, which names, comma-separated, ``module:attribute``
entries; either points at a mapping of family name -> TaskFamily, e.g.
``XLSTM_SUITE_TASK_FAMILIES=tests.toy_task:TASK_FAMILIES``. Its task configs are found by Hydra through
``XLSTM_SUITE_CONFIGS`` (experiments.config.configuration). Sweep workers inherit both.
"""

import functools
import importlib
import os
import reprlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tasks.formal_languages.config import FormalLanguageTaskConfig
from tasks.lm import text as lm_text
from tasks.lm.config import LMTaskConfig
from tasks.lra import ImageTaskConfig, ListOpsTaskConfig, PathfinderTaskConfig, RetrievalTaskConfig
from tasks.mqar.config import MQARTaskConfig
from tasks.nns.config import NNSTaskConfig
from tasks.spec import TaskSpec
from tasks.text import Text


@dataclass(frozen=True)
class TaskFamily:
    """``config``: the dataclass schema of the family's task configs, with ``problems()`` (checks across its fields,
    one message each) and ``spec()`` (the task's TaskSpec), both without torch; ``datamodule``: builds its
    LightningDataModule from a config of that schema and the batch size (it imports the family's data code, with
    torch and Lightning, when called: only to train); ``titles``: how reports print its tasks (task name -> the
    paper's spelling) where the name's words are not it; ``validation_sequences``: for a family of text, (config,
    count) -> inputs and targets (count, L), its first ``count`` validation sequences at the config's context length
    L (evaluations of language models at other lengths than they trained on)."""

    config: type
    datamodule: Callable[[Any, int], Any]
    titles: Mapping[str, str] = field(default_factory=dict)
    validation_sequences: Callable[[Any, int], tuple] | None = None

    def spec(self, task: dict[str, Any]) -> TaskSpec:
        """The TaskSpec of a task config of this family (a plain mapping), without torch."""
        return self.config(**task).spec()

    def build_datamodule(self, task: dict[str, Any], batch_size: int):
        return self.datamodule(self.config(**task), batch_size)


# Each family's datamodule, its data code imported when one is built (torch and Lightning: a sweep plans without).


def formal_language_datamodule(config: FormalLanguageTaskConfig, batch_size: int):
    from tasks.formal_languages.data import build_datamodule

    return build_datamodule(config, batch_size)


def lm_datamodule(config: LMTaskConfig, batch_size: int):
    from tasks.lm.data import build_datamodule

    return build_datamodule(config, batch_size)


def lra_image_datamodule(config: ImageTaskConfig, batch_size: int):
    from tasks.lra.data import ImageDataModule

    return ImageDataModule(config, batch_size)


def lra_listops_datamodule(config: ListOpsTaskConfig, batch_size: int):
    from tasks.lra.data import ListOpsDataModule

    return ListOpsDataModule(config, batch_size)


def lra_pathfinder_datamodule(config: PathfinderTaskConfig, batch_size: int):
    from tasks.lra.data import PathfinderDataModule

    return PathfinderDataModule(config, batch_size)


def lra_retrieval_datamodule(config: RetrievalTaskConfig, batch_size: int):
    from tasks.lra.data import RetrievalDataModule

    return RetrievalDataModule(config, batch_size)


def mqar_datamodule(config: MQARTaskConfig, batch_size: int):
    from tasks.mqar.data import build_datamodule

    return build_datamodule(config, batch_size)


def nns_datamodule(config: NNSTaskConfig, batch_size: int):
    from tasks.nns.data import build_datamodule

    return build_datamodule(config, batch_size)


TASK_FAMILIES = {
    "formal_language": TaskFamily(FormalLanguageTaskConfig, formal_language_datamodule),
    "lm": TaskFamily(LMTaskConfig, lm_datamodule, validation_sequences=lm_text.validation_sequences),
    "lra_image": TaskFamily(
        ImageTaskConfig, lra_image_datamodule, {"lra_image_grey": "G-Image", "lra_image_rgb": "RGB-Image"}
    ),
    "lra_listops": TaskFamily(ListOpsTaskConfig, lra_listops_datamodule, {"lra_listops": "ListOps"}),
    "lra_pathfinder": TaskFamily(PathfinderTaskConfig, lra_pathfinder_datamodule, {"lra_pathfinder": "Pathfinder"}),
    "lra_retrieval": TaskFamily(RetrievalTaskConfig, lra_retrieval_datamodule, {"lra_retrieval": "Retrieval"}),
    "mqar": TaskFamily(MQARTaskConfig, mqar_datamodule, {"mqar": "MQAR"}),
    "nns": TaskFamily(NNSTaskConfig, nns_datamodule, {"nns": "NNS"}),
}

TEXT: Text = lm_text.TEXT

PLUG_INS_VARIABLE = "XLSTM_SUITE_TASK_FAMILIES"
ENTRY_POINT_GROUP = "xlstm_suite.task_families"


def task_families() -> dict[str, TaskFamily]:
    """TASK_FAMILIES and the families plugged in: by installed packages' entry points (group ENTRY_POINT_GROUP), then
    through $XLSTM_SUITE_TASK_FAMILIES (read at every call)."""
    families = dict(TASK_FAMILIES)
    plugged = list(installed_plug_ins().items())
    for entry in filter(None, (entry.strip() for entry in os.environ.get(PLUG_INS_VARIABLE, "").split(","))):
        plugged.append((f"{PLUG_INS_VARIABLE} entry {entry!r}", plugged_in(entry)))
    for source, plug_in in plugged:
        for name, family in plug_in.items():
            if name in families:
                raise ValueError(f"{source}: task family {name!r} is registered already")
            families[name] = family
    return families


@functools.cache
def installed_plug_ins() -> dict[str, dict[str, TaskFamily]]:
    """The families of the installed packages' entry points of group ENTRY_POINT_GROUP, by entry point (read once:
    installed packages do not change while the suite runs)."""
    from importlib import metadata  # reads every installed package's metadata: only when the families are asked for

    plug_ins = {}
    for entry_point in metadata.entry_points(group=ENTRY_POINT_GROUP):
        source = f"entry point {entry_point.name!r} ({entry_point.value}) of group {ENTRY_POINT_GROUP!r}"
        try:
            families = entry_point.load()
        except (ImportError, AttributeError) as error:
            raise ValueError(f"{source}: cannot load it ({error})") from None
        plug_ins[source] = checked_families(source, entry_point.attr or entry_point.module, families)
    return plug_ins


def plugged_in(entry: str) -> dict[str, TaskFamily]:
    """The families of one ``module:attribute`` entry; ValueError naming the entry if it does not give them."""
    source = f"{PLUG_INS_VARIABLE} entry {entry!r}"
    module_name, _, attribute = entry.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"{source} is not module:attribute (e.g. tests.toy_task:TASK_FAMILIES)")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ValueError(f"{source}: cannot import {module_name!r} ({error})") from None
    if not hasattr(module, attribute):
        raise ValueError(f"{source}: module {module_name!r} has no {attribute!r}")
    return checked_families(source, attribute, getattr(module, attribute))


def checked_families(source: str, attribute: str, families: Any) -> dict[str, TaskFamily]:
    if not (
        isinstance(families, Mapping)
        and families
        and all(isinstance(name, str) and isinstance(family, TaskFamily) for name, family in families.items())
    ):
        raise ValueError(
            f"{source}: {attribute} must be a non-empty mapping of family name -> TaskFamily, not "
            f"{reprlib.repr(families)}"
        )
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


def validation_sequences(task: dict[str, Any], count: int) -> tuple:
    """Inputs and targets (count, L): the first ``count`` validation sequences of a resolved task config of a family
    of text at its context length L; ValueError naming the families of text for a task of any other family."""
    families = task_families()
    family = task_family(task.get("family"))
    if family.validation_sequences is None:
        of_text = sorted(name for name, each in families.items() if each.validation_sequences is not None)
        raise ValueError(
            f"task {task.get('name')!r} is of family {task.get('family')!r}, whose tasks are not text "
            f"with validation sequences; families of text: {of_text}"
        )
    return family.validation_sequences(family.config(**task), count)
