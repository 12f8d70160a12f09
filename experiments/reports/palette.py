"""One colour and one marker per model in every figure, keyed by the model's registry name (models.figure_styles): a
reader who has learnt that Mamba is green in one figure finds it green in the next. A value that is not a model (a
size, a task) takes the colours of a plain cycle in its order of appearance."""

from itertools import cycle

import seaborn as sns

from models.figure_styles import MODEL_COLOURS, MODEL_MARKERS

OTHER_MARKERS = ("o", "s", "D", "^", "v", "P", "X", "h")


def colours(key: str | None, values) -> dict:
    """Value -> colour: a model's own for ``key`` "model", else a cycle over the values in their order."""
    values = list(dict.fromkeys(values))
    if key == "model":
        fallback = cycle(sns.color_palette("Set2", 8))
        return {value: MODEL_COLOURS.get(value) or next(fallback) for value in values}
    return dict(zip(values, sns.color_palette("tab10", n_colors=max(len(values), 1))))


def markers(key: str | None, values) -> dict:
    values = list(dict.fromkeys(values))
    if key == "model":
        fallback = cycle(OTHER_MARKERS)
        return {value: MODEL_MARKERS.get(value) or next(fallback) for value in values}
    return dict(zip(values, cycle(OTHER_MARKERS)))


def marker_size(drawn_before: int) -> float:
    """Markers shrink with each line drawn in a panel, so that a line drawn on top of another (two models both at
    accuracy 1.0) leaves the one below visible around it."""
    return max(3.5, 9.0 - 2.0 * drawn_before)
