"""A toy task family that lives outside tasks/, plugged in through the registry's environment variable
(``XLSTM_SUITE_TASK_FAMILIES=tests.toy_task:TASK_FAMILIES``) by tests/tasks/test_task_plug_in.py: it shows that a family
needs no line in experiments/ or tasks/registry.py.

Previous token: the inputs are random tokens 1..V-1, and at every position after the first the model predicts the
token before it. This module is torch-free (validation imports it while planning); tests/toy_task_data.py serves the
data to Lightning.
"""

from dataclasses import dataclass, field
from typing import Literal

from tasks.registry import TaskFamily
from tasks.spec import TaskSpec


@dataclass
class PreviousTokenConfig:
    """Sequences of ``length`` tokens; fixed training, validation and test sets drawn from ``data_seed``."""

    name: Literal["previous_token"]
    family: Literal["toy"]
    vocab_size: int = field(metadata={"at_least": 3})
    length: int = field(metadata={"at_least": 2})
    data_seed: int = field(metadata={"at_least": 0})
    train_samples: int = field(metadata={"at_least": 1})
    val_samples: int = field(metadata={"at_least": 1})
    test_samples: int = field(metadata={"at_least": 1})

    def spec(self) -> TaskSpec:
        """Guessing picks one of the V - 1 input tokens."""
        return TaskSpec(
            name=self.name,
            input_kind="tokens",
            input_size=self.vocab_size,
            num_classes=self.vocab_size,
            random_accuracy=1 / (self.vocab_size - 1),
            group="toy",
        )

    def problems(self) -> list[str]:
        return []


def toy_datamodule(config: PreviousTokenConfig, batch_size: int):
    from tests.toy_task_data import build_datamodule  # torch and Lightning: only to train

    return build_datamodule(config, batch_size)


TASK_FAMILIES = {"toy": TaskFamily(PreviousTokenConfig, toy_datamodule)}
