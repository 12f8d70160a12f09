"""The task config of an LRA Pathfinder run (configs/task/lra_pathfinder.yaml), checked without torch and numpy."""

from dataclasses import dataclass, field
from typing import Literal

from tasks.lra.source import GENERATED, GeneratedSetsFields, source_problems
from tasks.spec import TaskSpec

RELEASE_SIDE = 32
MIN_SIDE = 16


def most_paddles(side: int) -> int:
    """The longest paths (in paddles) of which three fit a side x side image 4 pixels apart within a few hundred
    candidates, for the most part: 8 at 32 (28 ms an image of 7-8 paddles), 4 at 20 (2.3 ms of 2-4; 4-5 take 0.24 s)."""
    return (side - 8) // 3


def generation_problems(
    min_paddles: int, max_paddles: int, max_turn_degrees: float, side: int = RELEASE_SIDE
) -> list[str]:
    """Why the generator's parameters give no image, one message each."""
    problems = []
    if side < MIN_SIDE:
        problems.append(f"image_side={side} must be >= {MIN_SIDE}: three paths 4 pixels apart need the room")
        return problems
    if min_paddles < 1:
        problems.append(f"min_paddles={min_paddles} must be >= 1")
    if min_paddles > max_paddles:
        problems.append(f"min_paddles={min_paddles} must be <= max_paddles={max_paddles}")
    elif max_paddles > most_paddles(side):
        problems.append(
            f"max_paddles={max_paddles} must be <= {most_paddles(side)} at image_side={side}: longer "
            f"paths rarely fit three to a {side}x{side} image, 4 pixels apart"
        )
    if not 0 <= max_turn_degrees <= 90:
        problems.append(f"max_turn_degrees={max_turn_degrees} must be in [0, 90]")
    return problems


@dataclass
class PathfinderTaskConfig(GeneratedSetsFields):
    """32x32 grey images as sequences of 1024 pixels, labelled 1 when a path joins the two marks; from ``source``:
    generated (tasks.lra.pathfinder_generator: paths of min_paddles to max_paddles paddles turning by at most
    max_turn_degrees, train/val/test_samples images from data_seed) or the release folder pathfinder32, whose
    ``difficulty`` folder is split 80/10/10 with data_seed (state-spaces/s4's split). Generated images may be
    smaller than the release's (``image_side`` < 32, ``+task.image_side=16``: sequences of 256 pixels, for CPU
    runs)."""

    name: Literal["lra_pathfinder"]
    family: Literal["lra_pathfinder"]
    source: str
    difficulty: Literal["curv_baseline", "curv_contour_length_9", "curv_contour_length_14"]
    min_paddles: int = field(metadata={"at_least": 1, "at_most": 1_048_576})
    max_paddles: int = field(metadata={"at_least": 1, "at_most": 1_048_576})
    max_turn_degrees: float = field(metadata={"at_least": 0, "at_most": 90})
    image_side: int = field(default=RELEASE_SIDE, metadata={"at_least": 1, "at_most": 1_024})

    def spec(self) -> TaskSpec:
        """Two classes; guessing scores 0.5 (the paper's random baseline)."""
        return TaskSpec(
            name="lra_pathfinder",
            input_kind="vectors",
            input_size=1,
            num_classes=2,
            random_accuracy=0.5,
            group="long range arena",
            output_kind="sequence_class",
            pooling=self.pooling,
            fixed_length=self.image_side**2,
        )

    def problems(self) -> list[str]:
        problems = source_problems(self.source, "pathfinder32")
        if self.source != GENERATED and self.image_side != RELEASE_SIDE:
            problems.append(
                f"image_side={self.image_side} applies to generated images only; the release "
                f"{self.source!r} has {RELEASE_SIDE}x{RELEASE_SIDE} images"
            )
        return problems + generation_problems(
            self.min_paddles, self.max_paddles, self.max_turn_degrees, self.image_side
        )
