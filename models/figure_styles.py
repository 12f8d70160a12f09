"""Each model's colour and marker in the reports' figures, by registry name (experiments.reports.palette draws with
them): the xLSTM variants are reds, the LSTMs oranges, the Transformers blues, the state-space and linear-attention
models greens, purples and browns. A model missing here takes a colour of a fallback cycle."""

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
