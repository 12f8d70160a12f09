"""The linear-RNN baselines by backbone name, built from their validated configs."""

from typing import Callable

from torch import nn

from models.linear_rnn.config import CONFIGS
from models.linear_rnn.gla import GLAStack
from models.linear_rnn.hgrn import HGRNStack
from models.linear_rnn.hgrn2 import HGRN2Stack
from models.linear_rnn.retnet import RetNetStack
from models.linear_rnn.rwkv6 import RWKV6Stack

_MODULES = {"gla": GLAStack, "hgrn": HGRNStack, "hgrn2": HGRN2Stack, "retnet": RetNetStack, "rwkv6": RWKV6Stack}


def _builder(name: str) -> Callable[..., nn.Module]:
    def build(embedding_dim: int = 128, num_blocks: int = 2, **options) -> nn.Module:
        return _MODULES[name](CONFIGS[name](embedding_dim, num_blocks, **options))

    return build


BACKBONES: dict[str, Callable[..., nn.Module]] = {name: _builder(name) for name in CONFIGS}
