"""The task config of an LRA Pathfinder run (configs/task/lra_pathfinder.yaml), checked without torch and numpy."""

from dataclasses import dataclass, field
from typing import Literal

from tasks.lra.source import GeneratedSetsFields, source_problems
from tasks.spec import TaskSpec


MAX_PADDLES = 8  # three paths of more paddles rarely fit a 32x32 image with 4 pixels between them


def generation_problems(min_paddles: int, max_paddles: int, max_turn_degrees: float) -> list[str]:
    """Why the generator's parameters give no image, one message each."""
    problems = []
    if min_paddles < 1:
        problems.append(f"min_paddles={min_paddles} must be >= 1")
    if min_paddles > max_paddles:
        problems.append(f"min_paddles={min_paddles} must be <= max_paddles={max_paddles}")
    if max_paddles > MAX_PADDLES:
        problems.append(f"max_paddles={max_paddles} must be <= {MAX_PADDLES}: longer paths rarely fit three to a "
                        "32x32 image, 4 pixels apart")
    if not 0 <= max_turn_degrees <= 90:
        problems.append(f"max_turn_degrees={max_turn_degrees} must be in [0, 90]")
    return problems


@dataclass
class PathfinderTaskConfig(GeneratedSetsFields):
    """32x32 grey images as sequences of 1024 pixels, labelled 1 when a path joins the two marks; from ``source``:
    generated (tasks.lra.pathfinder_generator: paths of min_paddles to max_paddles paddles turning by at most
    max_turn_degrees, train/val/test_samples images from data_seed) or the release folder pathfinder32, whose
    ``difficulty`` folder is split 80/10/10 with data_seed (state-spaces/s4's split)."""

    name: Literal["lra_pathfinder"]
    family: Literal["lra_pathfinder"]
    source: str
    difficulty: Literal["curv_baseline", "curv_contour_length_9", "curv_contour_length_14"]
    min_paddles: int = field(metadata={"at_least": 1})
    max_paddles: int = field(metadata={"at_least": 1})
    max_turn_degrees: float = field(metadata={"at_least": 0, "at_most": 90})

    def spec(self) -> TaskSpec:
        """Two classes; guessing scores 0.5 (the paper's random baseline)."""
        return TaskSpec(name="lra_pathfinder", input_kind="vectors", input_size=1, num_classes=2,
                        random_accuracy=0.5, group="long range arena", output_kind="sequence_class",
                        pooling=self.pooling, fixed_length=32 * 32)

    def problems(self) -> list[str]:
        return (source_problems(self.source, "pathfinder32", can_generate=True)
                + generation_problems(self.min_paddles, self.max_paddles, self.max_turn_degrees))
