"""How models, groups and tasks are named in reports (the paper's spelling)."""

MODEL_NAMES = {
    "llama": "Llama", "gpt3": "GPT-3", "mamba": "Mamba", "retnet": "Retention", "hyena": "Hyena", "h3": "H3",
    "rwkv4": "RWKV-4", "rwkv5": "RWKV-5", "rwkv6": "RWKV-6", "hgrn": "HGRN", "hgrn2": "HGRN2", "gla": "GLA",
    "lstm": "LSTM", "lstm_block": "LSTM (Block)", "lstm_residual": "LSTM (Residual)",
    "xlstm_0_1": "xLSTM[0:1]", "xlstm_1_0": "xLSTM[1:0]", "xlstm_1_1": "xLSTM[1:1]", "xlstm_7_1": "xLSTM[7:1]",
}


def model_name(model: str) -> str:
    return MODEL_NAMES.get(model, model)


def label(text: str) -> str:
    """snake_case -> words, first letter capitalised: "deterministic_context_free" -> "Deterministic context free"."""
    words = text.replace("_", " ")
    return words[:1].upper() + words[1:]
