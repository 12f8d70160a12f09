"""The task config of a Nearest Neighbor Search run (configs/task/nns.yaml): typed and bounded fields, checked
without torch (and without numpy) by experiments' config validation; the generator runs the same checks before it
draws anything."""

from dataclasses import dataclass, field
from typing import Literal

from tasks.spec import TaskSpec


def length_problems(min_length: int, max_length: int) -> list[str]:
    """Why the length range [min_length, max_length] gives no sequence, one message per problem."""
    if min_length > max_length:
        return [f"min_length={min_length} must be <= max_length={max_length}; valid: 2 <= min_length <= {max_length}"]
    return []


@dataclass
class NNSTaskConfig:
    """Sequences of ``min_length`` to ``max_length`` positions (uniform), each a unit vector of ``vector_dim``
    features with a value uniform in [0, 1]; the first vector is the search key. Training, validation and test sets
    are fixed, drawn from ``data_seed`` (the same for every model) with disjoint seeds."""

    name: Literal["nns"]
    family: Literal["nns"]
    # 1 would make the unit vectors +-1: ties everywhere
    vector_dim: int = field(metadata={"at_least": 2, "at_most": 65_536})
    min_length: int = field(metadata={"at_least": 2, "at_most": 1_048_576})  # the key and at least one vector to search
    max_length: int = field(metadata={"at_least": 2, "at_most": 1_048_576})
    data_seed: int = field(metadata={"at_least": 0, "at_most": 4_294_967_295})
    train_samples: int = field(metadata={"at_least": 1, "at_most": 10_000_000})
    val_samples: int = field(metadata={"at_least": 1, "at_most": 10_000_000})
    test_samples: int = field(metadata={"at_least": 1, "at_most": 10_000_000})

    def spec(self) -> TaskSpec:
        """Real-valued inputs (the vector and its value) and one real output, scored by its squared error."""
        return TaskSpec(
            name="nns",
            input_kind="vectors",
            input_size=self.vector_dim + 1,
            num_classes=1,
            random_accuracy=None,
            group="nearest neighbor search",
            output_kind="scalar",
        )

    def problems(self) -> list[str]:
        return length_problems(self.min_length, self.max_length)
