"""The task config of an MQAR run (configs/task/mqar.yaml): typed and bounded fields, checked without torch (and
without numpy) by experiments' config validation; the generator runs the same checks before it draws anything."""

from dataclasses import dataclass, field
from typing import Literal

from tasks.spec import TaskSpec


def layout_problems(vocab_size: int, context_length: int, num_kv_pairs: int) -> list[str]:
    """Why (V, L, KV) gives no MQAR sequence (Arora et al. 2023's asserts), one message per problem."""
    problems = []
    if context_length % 2:
        problems.append(
            f"context_length={context_length} must be even (the queries take two positions each); "
            f"valid: {context_length - 1} or {context_length + 1}"
        )
    # Zoology asserts V > L, which the generator does not need: it draws KV distinct keys from [1, V//2) and KV
    # distinct values from [V//2, V), so it needs KV <= V//2 - 1. The xLSTM paper evaluates CL 8192 with V 8192
    # (MQAR-Experiment 3), which V > L would refuse.
    if num_kv_pairs > vocab_size // 2 - 1:
        problems.append(
            f"vocab_size={vocab_size} has too few keys for num_kv_pairs={num_kv_pairs}: keys are distinct "
            f"tokens of [1, vocab_size // 2), valid: vocab_size >= {2 * num_kv_pairs + 2}"
        )
    if 4 * num_kv_pairs > context_length:
        problems.append(
            f"num_kv_pairs={num_kv_pairs} is too many for context_length={context_length}: "
            f"4 * num_kv_pairs <= context_length, valid: 1 <= num_kv_pairs <= {context_length // 4}"
        )
    return problems


@dataclass
class MQARTaskConfig:
    """Samples of ``context_length`` tokens: ``num_kv_pairs`` key-value pairs, then their queries at power-law gaps
    (exponent ``power_a``); the other positions hold zeros, or random tokens with ``random_non_queries``.
    Training, validation and test sets are fixed, drawn from ``data_seed`` (the same for every model) with
    disjoint seeds."""

    name: Literal["mqar"]
    family: Literal["mqar"]
    # also bounded by layout_problems: num_kv_pairs distinct keys in [1, vocab_size // 2)
    vocab_size: int = field(metadata={"at_least": 1, "at_most": 1_048_576})
    context_length: int = field(metadata={"at_least": 4, "at_most": 1_048_576})
    num_kv_pairs: int = field(metadata={"at_least": 1, "at_most": 1_048_576})
    # gap g weighs (g + 1)^(power_a - 1): up to 50 the weights of a 2^20-token context stay finite in float64
    power_a: float = field(metadata={"above": 0, "at_most": 50})
    random_non_queries: bool
    data_seed: int = field(metadata={"at_least": 0, "at_most": 4_294_967_295})
    train_samples: int = field(metadata={"at_least": 1, "at_most": 10_000_000})
    val_samples: int = field(metadata={"at_least": 1, "at_most": 10_000_000})
    test_samples: int = field(metadata={"at_least": 1, "at_most": 10_000_000})

    def spec(self) -> TaskSpec:
        """Accuracy of guessing: 1 / (number of value tokens). Every target is a value token, and a guess that
        does not recall the pairs has no better choice among them."""
        return TaskSpec(
            name="mqar",
            input_kind="tokens",
            input_size=self.vocab_size,
            num_classes=self.vocab_size,
            random_accuracy=1 / (self.vocab_size - self.vocab_size // 2),
            group="associative recall",
        )

    def problems(self) -> list[str]:
        return layout_problems(self.vocab_size, self.context_length, self.num_kv_pairs)
