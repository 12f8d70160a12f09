"""The paper's xLSTM configurations by ratio and size (Table spaj_peaklr, Appendix D); torch-free."""

from models.config_checks import backbone_config, config_from
from models.xlstm.config import XLSTMLanguageModelConfig, XLSTMStackConfig

GPT2_VOCAB_PADDED = 50304  # GPT-2's 50257 tokens padded to a multiple of 64

# size -> (embedding dim, number of blocks), Table spaj_peaklr
SIZES = {
    "125m": (768, 24),
    "350m": (1024, 48),
    "760m": (1536, 48),
    "1.3b": (2048, 48),
    "2.7b": (2560, 64),
}

RATIOS = ("xlstm_1_0", "xlstm_7_1", "xlstm_0_1", "xlstm_1_1")

# model name -> the paper's name (reports print it)
DISPLAY_NAMES = {
    "xlstm": "xLSTM",
    "xlstm_1_0": "xLSTM[1:0]",
    "xlstm_7_1": "xLSTM[7:1]",
    "xlstm_0_1": "xLSTM[0:1]",
    "xlstm_1_1": "xLSTM[1:1]",
}


# The paper's sLSTM positions of xLSTM[7:1] by number of blocks (Appendix D); 24 blocks is the 125M model
# ("actually a [11:1] ratio").
PAPER_XLSTM_7_1_POSITIONS = {24: [3, 20], 48: [3, 5, 7, 40, 42, 44]}


def slstm_positions(ratio: str, num_blocks: int) -> list[int]:
    """Block indices of the sLSTM blocks for an xLSTM[a:b] ratio.

    xLSTM[7:1] uses the paper's positions where it gives them and every eighth block from index 3 otherwise
    (e.g. the 64-block 2.7B model, which the paper does not train). xLSTM[1:1] alternates, sLSTM second.
    """
    if ratio == "xlstm_1_0":
        return []
    if ratio == "xlstm_0_1":
        return list(range(num_blocks))
    if ratio == "xlstm_1_1":
        return list(range(1, num_blocks, 2))
    if ratio == "xlstm_7_1":
        positions = PAPER_XLSTM_7_1_POSITIONS.get(num_blocks, list(range(3, num_blocks, 8)))
        if not positions:
            raise ValueError(f"xlstm_7_1 needs num_blocks >= 4 to hold an sLSTM block, got num_blocks={num_blocks}")
        return positions
    raise ValueError(f"unknown xLSTM ratio {ratio!r}; valid choices: {list(RATIOS)}")


def stack_config(ratio: str, embedding_dim: int, num_blocks: int, **overrides) -> XLSTMStackConfig:
    if "slstm_at" in overrides:
        raise ValueError(f"{ratio} places its sLSTM blocks itself; give slstm_at to the `xlstm` backbone instead")
    return config_from(
        XLSTMStackConfig,
        ratio,
        embedding_dim=embedding_dim,
        num_blocks=num_blocks,
        slstm_at=slstm_positions(ratio, num_blocks),
        **overrides,
    )


def _ratio_config(ratio: str):
    def make(embedding_dim: int = 128, num_blocks: int = 2, **overrides) -> XLSTMStackConfig:
        return stack_config(ratio, embedding_dim, num_blocks, **overrides)

    return make


# Backbone name -> config function: `xlstm` takes explicit sLSTM positions, the ratios place them.
CONFIGS = {"xlstm": backbone_config(XLSTMStackConfig, "xlstm")} | {ratio: _ratio_config(ratio) for ratio in RATIOS}


def language_model_config(ratio: str, size: str, vocab_size: int = GPT2_VOCAB_PADDED) -> XLSTMLanguageModelConfig:
    if size not in SIZES:
        raise ValueError(f"unknown size {size!r}; valid choices: {list(SIZES)}")
    embedding_dim, num_blocks = SIZES[size]
    return XLSTMLanguageModelConfig(stack=stack_config(ratio, embedding_dim, num_blocks), vocab_size=vocab_size)
