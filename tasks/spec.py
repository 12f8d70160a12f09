"""What a training module needs to know about a task (tasks never import models)."""

from dataclasses import dataclass
from typing import Literal

OUTPUT_KINDS = ("classes", "scalar", "vocab")
IGNORE_INDEX = -100  # target of positions that are not scored (torch's cross-entropy default); scalar targets: NaN


@dataclass(frozen=True)
class TaskSpec:
    """Shape of a task's inputs and outputs and how to score them.

    name: registry name of the task.
    input_kind: "tokens" (integer ids, embed them) or "vectors" (float features).
    input_size: vocabulary size |V| for tokens, feature dimension for vectors.
    num_classes: number of output classes (formal languages: |V|); 1 for a scalar output.
    random_accuracy: s_rand, the accuracy of guessing; scaled accuracy = (acc - s_rand) / (1 - s_rand); None for a
        scalar output (no accuracy).
    group: the task's family for reports, e.g. its level of the Chomsky hierarchy.
    output_kind: "classes" (integer targets, IGNORE_INDEX where not scored; cross-entropy and accuracy) or
        "scalar" (float targets, NaN where not scored; mean squared error) or "vocab" (language modelling: the next
        token at every position, IGNORE_INDEX where not scored; token-weighted cross-entropy and perplexity).
    """

    name: str
    input_kind: str
    input_size: int
    num_classes: int
    random_accuracy: float | None
    group: str
    output_kind: Literal["classes", "scalar", "vocab"] = "classes"

    def __post_init__(self) -> None:
        if self.output_kind not in OUTPUT_KINDS:
            raise ValueError(f"output_kind={self.output_kind!r} is not valid; valid choices: {list(OUTPUT_KINDS)}")
        if self.output_kind == "scalar" and (self.num_classes, self.random_accuracy) != (1, None):
            raise ValueError(f"a scalar task has num_classes=1 and random_accuracy=None, not num_classes="
                             f"{self.num_classes} and random_accuracy={self.random_accuracy}")
