"""One colour and one marker per model in every figure, keyed by the model's registry name: a reader who has learnt
that Mamba is green in one figure finds it green in the next. The xLSTM variants are reds, the LSTMs oranges, the
Transformers blues, the state-space and linear-attention models greens, purples and browns. A value that is not a
model (a size, a task) takes the colours of a plain cycle in its order of appearance."""

from itertools import cycle

import seaborn as sns

MODEL_COLOURS = {
    "llama": "#1f77b4", "gpt3": "#17becf", "mamba": "#2ca02c", "mamba_tied": "#98df8a", "h3": "#bcbd22",
    "hyena": "#8c8c00", "rwkv4": "#9467bd", "rwkv5": "#c5b0d5", "rwkv6": "#5e3c99", "retnet": "#e377c2",
    "hgrn": "#8c564b", "hgrn2": "#c49c94", "gla": "#637939",
    "lstm": "#ff7f0e", "lstm_block": "#b35806", "lstm_residual": "#fdb863",
    "xlstm": "#d62728", "xlstm_1_0": "#d62728", "xlstm_7_1": "#67000d", "xlstm_0_1": "#f768a1", "xlstm_1_1": "#fb6a4a",
}
MODEL_MARKERS = {
    "llama": "o", "gpt3": "v", "mamba": "s", "mamba_tied": "s", "h3": "<", "hyena": ">", "rwkv4": "D", "rwkv5": "d",
    "rwkv6": "p", "retnet": "h", "hgrn": "8", "hgrn2": "8", "gla": "H",
    "lstm": "^", "lstm_block": "v", "lstm_residual": "<",
    "xlstm": "*", "xlstm_1_0": "*", "xlstm_7_1": "P", "xlstm_0_1": "X", "xlstm_1_1": "h",
}
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
