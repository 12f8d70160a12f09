"""LSTM baselines of the xLSTM paper: the vanilla multi-layer LSTM, its residual version, and LSTM (Block)."""

from torch import nn

from models.lstm.block import FeedForward, LSTMBlockStack, LSTMTransformerBlock
from models.lstm.config import LANGUAGE_MODEL_PRESETS, LSTMBlockConfig, LSTMConfig, ResidualLSTMConfig, config_from
from models.lstm.residual import ResidualLSTM, ResidualLSTMBlock
from models.lstm.vanilla import VanillaLSTM


def build_lstm(embedding_dim: int = 128, num_blocks: int = 2, **options) -> nn.Module:
    return VanillaLSTM(config_from(LSTMConfig, "lstm", embedding_dim=embedding_dim, num_blocks=num_blocks, **options))


def build_lstm_residual(embedding_dim: int = 128, num_blocks: int = 2, **options) -> nn.Module:
    sizes = dict(embedding_dim=embedding_dim, num_blocks=num_blocks)
    return ResidualLSTM(config_from(ResidualLSTMConfig, "lstm_residual", **sizes, **options))


def build_lstm_block(embedding_dim: int = 128, num_blocks: int = 2, **options) -> nn.Module:
    sizes = dict(embedding_dim=embedding_dim, num_blocks=num_blocks)
    return LSTMBlockStack(config_from(LSTMBlockConfig, "lstm_block", **sizes, **options))


BACKBONES = {"lstm": build_lstm, "lstm_residual": build_lstm_residual, "lstm_block": build_lstm_block}
TIED_EMBEDDINGS: set[str] = set()

__all__ = [
    "BACKBONES",
    "LANGUAGE_MODEL_PRESETS",
    "TIED_EMBEDDINGS",
    "FeedForward",
    "LSTMBlockConfig",
    "LSTMBlockStack",
    "LSTMConfig",
    "LSTMTransformerBlock",
    "ResidualLSTM",
    "ResidualLSTMBlock",
    "ResidualLSTMConfig",
    "VanillaLSTM",
]
