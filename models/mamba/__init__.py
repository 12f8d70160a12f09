"""Mamba (Gu & Dao 2023): selective state-space blocks with pre-RMSNorm residuals."""

from torch import nn

from models.mamba.block import MambaBackbone, MambaBlock, MambaLayerState, MambaMixer
from models.mamba.config import LANGUAGE_MODEL_PRESETS, MambaConfig, config_from


def build_mamba(embedding_dim: int = 128, num_blocks: int = 2, **options) -> nn.Module:
    return MambaBackbone(config_from(embedding_dim=embedding_dim, num_blocks=num_blocks, **options))


BACKBONES = {"mamba": build_mamba}
TIED_EMBEDDINGS: set[str] = set()

__all__ = [
    "BACKBONES",
    "LANGUAGE_MODEL_PRESETS",
    "TIED_EMBEDDINGS",
    "MambaBackbone",
    "MambaBlock",
    "MambaConfig",
    "MambaLayerState",
    "MambaMixer",
    "build_mamba",
]
