"""The Mamba backbone by name: a builder from the validated config of ``models.mamba.config``."""

from typing import Callable

from torch import nn

from models.mamba.block import MambaBackbone
from models.mamba.config import CONFIGS


def build_mamba(embedding_dim: int = 128, num_blocks: int = 2, **options) -> MambaBackbone:
    return MambaBackbone(CONFIGS["mamba"](embedding_dim, num_blocks, **options))


BACKBONES: dict[str, Callable[..., nn.Module]] = {"mamba": build_mamba}
