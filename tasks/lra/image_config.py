"""The task config of an LRA Image run (configs/task/lra_image.yaml), checked without torch and numpy."""

from dataclasses import dataclass, field
from typing import Literal

from tasks.lra.source import GeneratedSetsFields, source_problems
from tasks.spec import TaskSpec

SIDE = 32  # CIFAR-10's pixels per side (tasks.lra.cifar_reader, which needs numpy)
NAMES = {1: "lra_image_grey", 3: "lra_image_rgb"}


@dataclass
class ImageTaskConfig(GeneratedSetsFields):
    """CIFAR-10 images as sequences of 1024 pixels, ``channels`` 1 (G-Image, the LRA's grey scale) or 3 (RGB-Image,
    Orvieto et al. 2023), classified into the 10 classes; from ``source``, the release folder cifar-10-batches-py,
    where validation is ``val_fraction`` of the training images, drawn with ``data_seed`` (state-spaces/s4: 0.1) and
    the test set is test_batch; or generated, the stand-in of ten shapes in CIFAR-10's format
    (tasks.lra.image_generator: train/val/test_samples images from data_seed). ``pool``: each image averaged over
    squares of pool x pool pixels, a sequence of (32 / pool)^2 pixels (1: the LRA's 1024; 2: 256, for a CPU)."""

    name: Literal["lra_image_grey", "lra_image_rgb"]
    family: Literal["lra_image"]
    source: str
    channels: Literal[1, 3]
    val_fraction: float = field(metadata={"above": 0, "at_most": 0.5})
    pool: Literal[1, 2, 4] = 1

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
            fixed_length=(SIDE // self.pool) ** 2,
        )

    def problems(self) -> list[str]:
        problems = source_problems(self.source, "cifar-10-batches-py")
        if self.name != NAMES[self.channels]:
            problems.append(
                f"name={self.name!r} does not match channels={self.channels}; valid: name={NAMES[self.channels]!r}"
            )
        return problems
