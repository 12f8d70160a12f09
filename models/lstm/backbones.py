"""The LSTM baselines by backbone name, built from their validated configs."""

from typing import Callable

from torch import nn

from models.lstm.block import LSTMBlockStack
from models.lstm.config import CONFIGS
from models.lstm.residual import ResidualLSTM
from models.lstm.vanilla import VanillaLSTM

_MODULES = {"lstm": VanillaLSTM, "lstm_residual": ResidualLSTM, "lstm_block": LSTMBlockStack}


def _builder(name: str) -> Callable[..., nn.Module]:
    def build(embedding_dim: int = 128, num_blocks: int = 2, **options) -> nn.Module:
        return _MODULES[name](CONFIGS[name](embedding_dim, num_blocks, **options))

    return build


BACKBONES: dict[str, Callable[..., nn.Module]] = {name: _builder(name) for name in CONFIGS}
