"""What a training module needs to know about a task (tasks never import models)."""

from dataclasses import dataclass
from typing import Literal

OUTPUT_KINDS = ("classes", "scalar", "vocab", "sequence_class", "sequence_pair_class")
SEQUENCE_KINDS = ("sequence_class", "sequence_pair_class")  # one class per sequence (pair): the module pools
SEQUENCES_PER_SAMPLE = {"sequence_pair_class": 2}  # the sequences a sample feeds the backbone (1 unless named)
POOLINGS = ("mean", "last")
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
        token at every position, IGNORE_INDEX where not scored; token-weighted cross-entropy and perplexity) or
        "sequence_class" (one class per sequence: inputs (B, S) or (B, S, d), targets (B, S) hold the sequence's
        class at its positions and IGNORE_INDEX at its padding; the module pools the backbone's outputs over the
        sequence's positions and classifies the pooled vector; cross-entropy and accuracy per sequence) or
        "sequence_pair_class" (one class per pair of sequences, e.g. do two documents cite each other: inputs
        (B, 2, S), targets (B, 2, S) laid out as "sequence_class" per sequence; the module pools each sequence and
        classifies the pair from its two pooled vectors).
    pooling: how a sequence kind pools over a sequence's positions, "mean" (over its non-padding positions) or
        "last" (its last position); None for the per-position kinds.
    fixed_length: the length of every sequence of a task whose config names no length (an image's pixels); None
        where the config's length keys say it (compute estimates read either).
    token_buckets: for "vocab": the names of the buckets its evaluation batches place each target token in (a third
        tensor (B, S) of bucket indices, -1 for none), scored per bucket besides the whole; None without buckets.
    """

    name: str
    input_kind: str
    input_size: int
    num_classes: int
    random_accuracy: float | None
    group: str
    output_kind: Literal["classes", "scalar", "vocab", "sequence_class", "sequence_pair_class"] = "classes"
    pooling: Literal["mean", "last"] | None = None
    fixed_length: int | None = None
    token_buckets: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.output_kind not in OUTPUT_KINDS:
            raise ValueError(f"output_kind={self.output_kind!r} is not valid; valid choices: {list(OUTPUT_KINDS)}")
        if self.output_kind == "scalar" and (self.num_classes, self.random_accuracy) != (1, None):
            raise ValueError(
                f"a scalar task has num_classes=1 and random_accuracy=None, not num_classes="
                f"{self.num_classes} and random_accuracy={self.random_accuracy}"
            )
        if self.output_kind in SEQUENCE_KINDS and self.pooling not in POOLINGS:
            raise ValueError(
                f"a {self.output_kind} task pools its sequences: pooling={self.pooling!r} is not valid; "
                f"valid choices: {list(POOLINGS)}"
            )
        if self.token_buckets is not None and self.output_kind != "vocab":
            raise ValueError(
                f"token_buckets are for output_kind='vocab' (language modelling), not "
                f"{self.output_kind!r}; valid: token_buckets=None"
            )
        if self.output_kind not in SEQUENCE_KINDS and self.pooling is not None:
            raise ValueError(
                f"pooling={self.pooling!r} is only for the kinds {list(SEQUENCE_KINDS)}, not for "
                f"output_kind={self.output_kind!r}; valid: pooling=None"
            )
