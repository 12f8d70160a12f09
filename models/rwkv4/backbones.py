"""The RWKV-4 backbone by name: a builder from the validated config of ``models.rwkv4.config``."""

from typing import Callable

from torch import nn

from models.rwkv4.block import RWKV4Backbone
from models.rwkv4.config import CONFIGS


def build_rwkv4(embedding_dim: int = 128, num_blocks: int = 2, **options) -> RWKV4Backbone:
    return RWKV4Backbone(CONFIGS["rwkv4"](embedding_dim, num_blocks, **options))


BACKBONES: dict[str, Callable[..., nn.Module]] = {"rwkv4": build_rwkv4}
