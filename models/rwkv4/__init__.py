"""RWKV-4 (Peng et al. 2023): time-mix (WKV) and channel-mix blocks with pre-LayerNorm residuals."""

from torch import nn

from models.rwkv4.block import ChannelMix, RWKV4Backbone, RWKV4Block, RWKV4BlockState, TimeMix, TimeMixState
from models.rwkv4.config import LANGUAGE_MODEL_PRESETS, RWKV4Config, config_from


def build_rwkv4(embedding_dim: int = 128, num_blocks: int = 2, **options) -> nn.Module:
    return RWKV4Backbone(config_from(embedding_dim=embedding_dim, num_blocks=num_blocks, **options))


BACKBONES = {"rwkv4": build_rwkv4}
TIED_EMBEDDINGS: set[str] = set()

__all__ = [
    "BACKBONES",
    "LANGUAGE_MODEL_PRESETS",
    "TIED_EMBEDDINGS",
    "ChannelMix",
    "RWKV4Backbone",
    "RWKV4Block",
    "RWKV4BlockState",
    "RWKV4Config",
    "TimeMix",
    "TimeMixState",
    "build_rwkv4",
]
