"""The task config of an LRA ListOps run (configs/task/lra_listops.yaml), checked without torch and numpy."""

from dataclasses import dataclass, field
from typing import Literal

from tasks.lra.listops_tokens import VOCABULARY_SIZE
from tasks.lra.source import GeneratedSetsFields, source_problems
from tasks.spec import TaskSpec


def generation_problems(max_depth: int, max_args: int, min_length: int, max_length: int) -> list[str]:
    """Why the recipe's parameters give no sample, one message each."""
    problems = [
        f"{name}={value} must be >= {least}"
        for name, value, least in (
            ("max_depth", max_depth, 2),
            ("max_args", max_args, 2),
            ("min_length", min_length, 1),
        )
        if value < least
    ]
    if min_length > max_length:
        problems.append(f"min_length={min_length} must be <= max_length={max_length}")
    return problems


@dataclass
class ListOpsTaskConfig(GeneratedSetsFields):
    """ListOps sequences of min_length to max_length tokens (the release: 500 < length < 2000), nested operators to
    ``max_depth`` with 2 to ``max_args`` arguments, each labelled by its value 0-9; from ``source`` (generated, or
    the release folder listops-1000). Generated sets are drawn from ``data_seed`` with disjoint seeds per split."""

    name: Literal["lra_listops"]
    family: Literal["lra_listops"]
    source: str
    max_depth: int = field(metadata={"at_least": 2, "at_most": 1_048_576})
    max_args: int = field(metadata={"at_least": 2, "at_most": 1_048_576})
    min_length: int = field(metadata={"at_least": 1, "at_most": 1_048_576})
    max_length: int = field(metadata={"at_least": 1, "at_most": 1_048_576})  # also the longest release source accepted

    def spec(self) -> TaskSpec:
        """Ten classes, the values 0-9; guessing scores 0.1 (the paper's random baseline, Table lra_test_accuracy)."""
        return TaskSpec(
            name="lra_listops",
            input_kind="tokens",
            input_size=VOCABULARY_SIZE,
            num_classes=10,
            random_accuracy=0.1,
            group="long range arena",
            output_kind="sequence_class",
            pooling=self.pooling,
        )

    def problems(self) -> list[str]:
        return source_problems(self.source, "listops-1000") + generation_problems(
            self.max_depth, self.max_args, self.min_length, self.max_length
        )
