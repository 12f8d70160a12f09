"""The task config of an LRA Image run (configs/task/lra_image.yaml), checked without torch and numpy."""

from dataclasses import dataclass, field
from typing import Literal

from tasks.lra.source import source_problems
from tasks.spec import TaskSpec

NAMES = {1: "lra_image_grey", 3: "lra_image_rgb"}


@dataclass
class ImageTaskConfig:
    """CIFAR-10 images as sequences of 1024 pixels, ``channels`` 1 (G-Image, the LRA's grey scale) or 3 (RGB-Image,
    Orvieto et al. 2023), classified into the 10 classes; from ``source``, the release folder cifar-10-batches-py
    (there is no generator). Validation is ``val_fraction`` of the training images, drawn with ``data_seed``
    (state-spaces/s4: 0.1); the test set is test_batch."""

    name: Literal["lra_image_grey", "lra_image_rgb"]
    family: Literal["lra_image"]
    source: str
    channels: Literal[1, 3]
    val_fraction: float = field(metadata={"above": 0, "at_most": 0.5})
    pooling: Literal["mean", "last"]
    data_seed: int = field(metadata={"at_least": 0, "at_most": 4_294_967_295})

    def spec(self) -> TaskSpec:
        """Ten classes; guessing scores 0.1 (the paper's random baseline)."""
        return TaskSpec(
            name=self.name,
            input_kind="vectors",
            input_size=self.channels,
            num_classes=10,
            random_accuracy=0.1,
            group="long range arena",
            output_kind="sequence_class",
            pooling=self.pooling,
            fixed_length=32 * 32,
        )

    def problems(self) -> list[str]:
        problems = source_problems(self.source, "cifar-10-batches-py", can_generate=False)
        if self.name != NAMES[self.channels]:
            problems.append(
                f"name={self.name!r} does not match channels={self.channels}; valid: name={NAMES[self.channels]!r}"
            )
        return problems
