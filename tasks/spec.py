"""What a training module needs to know about a task (tasks never import models)."""

from dataclasses import dataclass

IGNORE_INDEX = -100  # target of positions that are not scored (torch's cross-entropy default)


@dataclass(frozen=True)
class TaskSpec:
    """Shape of a task's inputs and outputs and how to scale its accuracy.

    name: registry name of the task.
    input_kind: "tokens" (integer ids, embed them) or "vectors" (float features).
    input_size: vocabulary size |V| for tokens, feature dimension for vectors.
    num_classes: number of output classes (formal languages: |V|).
    random_accuracy: s_rand, the accuracy of guessing; scaled accuracy = (acc - s_rand) / (1 - s_rand).
    group: the task's family for reports, e.g. its level of the Chomsky hierarchy.
    """

    name: str
    input_kind: str
    input_size: int
    num_classes: int
    random_accuracy: float
    group: str
