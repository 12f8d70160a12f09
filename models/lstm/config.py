"""Configs of the three LSTM baselines, by backbone name, and their size presets; validated on construction.

Torch-free, so that a run config is checked before torch is imported."""

from dataclasses import dataclass, field
from typing import ClassVar

from models.config_checks import POSITIVE, ModelConfig, backbone_config


@dataclass
class LSTMConfig(ModelConfig):
    """The paper's "default PyTorch LSTM": ``num_blocks`` stacked layers of hidden size ``embedding_dim``,
    no skip connections, no norms (Appendix, ablation details)."""

    owner: ClassVar[str] = "lstm"

    embedding_dim: int = field(default=128, metadata=POSITIVE)
    num_blocks: int = field(default=2, metadata=POSITIVE)


@dataclass
class ResidualLSTMConfig(ModelConfig):
    """Pre-LayerNorm residual blocks x + LSTM(LN(x)) and a final LayerNorm ("Adding Resnet Backbone").

    LayerNorm without bias is the xLSTM backbone's norm and reproduces the paper's 506.1M (with bias: 506.2M)."""

    owner: ClassVar[str] = "lstm_residual"

    embedding_dim: int = field(default=128, metadata=POSITIVE)
    num_blocks: int = field(default=2, metadata=POSITIVE)
    norm_bias: bool = False
    norm_eps: float = field(default=1e-5, metadata=POSITIVE)


@dataclass
class LSTMBlockConfig(ModelConfig):
    """Transformer blocks with an LSTM in place of attention: x + LSTM(LN(x)), then x + FFN(LN(x)) with a
    non-gated GeLU MLP of inner size ``ffn_proj_factor * embedding_dim``; a final LayerNorm.

    Without biases in the norms and the MLP (as in the xLSTM backbone) the 350M preset has the paper's 505.9M;
    with MLP biases it would be 506.0M."""

    owner: ClassVar[str] = "lstm_block"

    embedding_dim: int = field(default=128, metadata=POSITIVE)
    num_blocks: int = field(default=2, metadata=POSITIVE)
    ffn_proj_factor: float = field(default=4.0, metadata=POSITIVE)
    ffn_bias: bool = False
    norm_bias: bool = False
    norm_eps: float = field(default=1e-5, metadata=POSITIVE)

    def problems(self) -> list[str]:
        inner = self.ffn_proj_factor * self.embedding_dim
        if inner != int(inner):
            return [
                f"lstm_block.ffn_proj_factor={self.ffn_proj_factor!r} times embedding_dim={self.embedding_dim} "
                f"must be a whole number of MLP units, got {inner}"
            ]
        return []

    @property
    def ffn_inner_dim(self) -> int:
        return int(self.ffn_proj_factor * self.embedding_dim)


LANGUAGE_MODEL_PRESETS = {
    "lstm": {"350m": dict(embedding_dim=1536, num_blocks=24)},
    "lstm_residual": {"350m": dict(embedding_dim=1024, num_blocks=48)},
    "lstm_block": {"350m": dict(embedding_dim=1024, num_blocks=24, ffn_proj_factor=4.0)},
}
"""The LSTM rows of Table ablstudies (350M class, GPT-2 vocabulary 50304, untied head).

- ``lstm`` "Vanilla Multi-Layer LSTM", 607.8M: 24 layers of hidden size 1536, as the text states. PyTorch's two
  bias vectors per layer are needed for 607.8M (one bias: 607.7M).
- ``lstm_residual`` "Adding Resnet Backbone", 506.1M: the text gives no size; E = 1024 with 48 blocks is the
  xLSTM 350M backbone (Table spaj_peaklr) and gives 506.12M with bias-free LayerNorms.
- ``lstm_block`` "Adding Up-Projection Backbone", 505.9M: "every second LSTM layer replaced by a feed-forward
  network", i.e. the 48 layers become 24 LSTM + 24 MLP at E = 1024; Vaswani et al.'s factor 4 without biases
  gives 505.92M.
"""


CONFIGS = {
    "lstm": backbone_config(LSTMConfig, "lstm"),
    "lstm_residual": backbone_config(ResidualLSTMConfig, "lstm_residual"),
    "lstm_block": backbone_config(LSTMBlockConfig, "lstm_block"),
}
TIED_EMBEDDINGS: set[str] = set()

# model name -> the paper's name (reports print it)
DISPLAY_NAMES = {"lstm": "LSTM", "lstm_residual": "LSTM (Residual)", "lstm_block": "LSTM (Block)"}
