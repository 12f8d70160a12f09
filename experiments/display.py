"""How models, tasks, metrics and scales are named and shown in reports (the paper's spelling): models and tasks by
the names their families give them (models.catalog, tasks.registry)."""

from dataclasses import dataclass

from models.catalog import display_name
from tasks.registry import task_title

# What a report at each scale can claim (DESIGN.md, Scales).
SCALE_NOTES = {
    "smoke": "Smoke scale: tests that every code path of the artifact runs end to end. Its numbers are not findings.",
    "mini": "Mini scale: the artifact at one CPU's budget (sizes, steps and grid below). Each run is one draw of its "
    "seed; compare with the paper's finding, not its numbers.",
    "paper": "Paper scale: the paper's hyperparameters, sizes, steps, seeds and grid.",
}


@dataclass(frozen=True)
class MetricScale:
    """The range a metric can take, for colour scales: a diverging palette around ``center`` when it has one (the
    middle of the range, where the palette turns)."""

    label: str
    low: float
    high: float
    center: float | None = None

    def __post_init__(self) -> None:
        if self.center is not None and self.center != (self.low + self.high) / 2:
            raise ValueError(f"{self.label}: center={self.center} must be the middle of [{self.low}, {self.high}]")


# By the metric's last name component (test/scaled_accuracy -> scaled_accuracy). Scaled accuracy maps guessing to
# 0 and perfect to 1; below guessing it reaches -1 (a task with s_rand = 1/2 answered always wrong).
METRIC_SCALES = {
    "scaled_accuracy": MetricScale("scaled accuracy", -1.0, 1.0, center=0.0),
    "accuracy": MetricScale("accuracy", 0.0, 1.0),
}


def metric_scale(metric: str) -> MetricScale:
    name = metric.rsplit("/", 1)[-1]
    if name not in METRIC_SCALES:
        raise ValueError(f"no colour scale for metric {metric!r}; known metrics: {sorted(METRIC_SCALES)}")
    return METRIC_SCALES[name]


UNIT_SUFFIXES = {"mib": "MiB"}  # a metric name's last word that names its unit -> the unit


def metric_label(metric: str) -> str:
    """An axis label for a metric: its scale's label where it has one (scaled accuracy), else its last name part,
    its unit in parentheses: "generation/memory_mib" -> "memory (MiB)"."""
    name = metric.rsplit("/", 1)[-1]
    if name in METRIC_SCALES:
        return METRIC_SCALES[name].label
    words, _, unit = name.rpartition("_")
    if words and unit in UNIT_SUFFIXES:
        return f"{words.replace('_', ' ')} ({UNIT_SUFFIXES[unit]})"
    return name.replace("_", " ")


SPLIT_NAMES = {"val": "validation"}  # a metric's split as an axis names it


def metric_label_with_split(metric: str) -> str:
    """An axis label that names the metric's split: "val/perplexity" -> "validation perplexity"."""
    split = metric.rpartition("/")[0]
    return f"{SPLIT_NAMES.get(split, split)} {metric_label(metric)}".strip()


def model_name(model: str) -> str:
    """The paper's name of a model ("xlstm_7_1" -> "xLSTM[7:1]"), as its family gives it, else the name itself."""
    return display_name(model)


def label(text: str) -> str:
    """snake_case -> words, first letter capitalised: "deterministic_context_free" -> "Deterministic context free"."""
    words = text.replace("_", " ")
    return words[:1].upper() + words[1:]


def task_name(task: str) -> str:
    """The paper's spelling where the task's family gives one ("lra_listops" -> "ListOps"), else its words."""
    return task_title(task) or label(task)


def value_name(key: str, value) -> str:
    """How a cell value is shown: models and tasks by their names, other keys as key=value."""
    if key == "model":
        return model_name(value)
    if key == "task":
        return task_name(value)
    return f"{key.rsplit('.', 1)[-1]}={value}"
