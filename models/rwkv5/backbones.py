"""The RWKV-5 backbone by name, built from its validated config."""

from typing import Callable

from torch import nn

from models.rwkv5.block import RWKV5Stack
from models.rwkv5.config import CONFIGS


def build_rwkv5(embedding_dim: int = 128, num_blocks: int = 2, **options) -> RWKV5Stack:
    return RWKV5Stack(CONFIGS["rwkv5"](embedding_dim, num_blocks, **options))


BACKBONES: dict[str, Callable[..., nn.Module]] = {"rwkv5": build_rwkv5}
