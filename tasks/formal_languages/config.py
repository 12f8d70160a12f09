"""The task config of a formal-language run (configs/task/*.yaml): typed and bounded fields, checked without torch
by experiments' config validation (field metadata: ``at_least``, ``above``, ``at_most``)."""

from dataclasses import dataclass, field
from typing import Literal

from tasks.formal_languages.registry import FORMAL_LANGUAGE_TASKS, get_task
from tasks.spec import TaskSpec


@dataclass
class FormalLanguageTaskConfig:
    """Multi-length training up to ``train_max_length``; validation and test sets of fixed samples with lengths
    uniform in [eval_min_length, eval_max_length], from ``data_seed`` (the same for every model)."""

    name: Literal[tuple(FORMAL_LANGUAGE_TASKS)]
    family: Literal["formal_language"]
    train_max_length: int = field(metadata={"at_least": 1, "at_most": 1_048_576})
    eval_min_length: int = field(metadata={"at_least": 1, "at_most": 1_048_576})
    eval_max_length: int = field(metadata={"at_least": 1, "at_most": 1_048_576})
    data_seed: int = field(metadata={"at_least": 0, "at_most": 4_294_967_295})
    val_samples: int = field(metadata={"at_least": 1, "at_most": 10_000_000})
    test_samples: int = field(metadata={"at_least": 1, "at_most": 10_000_000})

    def spec(self) -> TaskSpec:
        return get_task(self.name).spec

    def problems(self) -> list[str]:
        shortest = get_task(self.name).min_length
        problems = []
        if self.train_max_length < shortest:
            problems.append(
                f"train_max_length={self.train_max_length} is below {self.name}'s shortest sequence ({shortest})"
            )
        if not shortest <= self.eval_min_length <= self.eval_max_length:
            problems.append(
                f"eval_min_length={self.eval_min_length} and eval_max_length={self.eval_max_length} "
                f"must satisfy {shortest} <= eval_min_length <= eval_max_length"
            )
        return problems
