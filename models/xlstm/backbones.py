"""xLSTM stacks by backbone name (`xlstm` with explicit sLSTM positions, and the paper's ratios)."""

from typing import Callable

from torch import nn

from models.xlstm.presets import CONFIGS
from models.xlstm.stack import XLSTMStack


def _builder(name: str) -> Callable[..., nn.Module]:
    def build(**config) -> nn.Module:
        return XLSTMStack(CONFIGS[name](**config))

    return build


BACKBONES: dict[str, Callable[..., nn.Module]] = {name: _builder(name) for name in CONFIGS}
