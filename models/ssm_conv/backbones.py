"""The H3 and Hyena backbones by name: builders from the validated configs of ``models.ssm_conv.config``."""

from typing import Callable

from torch import nn

from models.ssm_conv.config import CONFIGS
from models.ssm_conv.h3 import H3Stack
from models.ssm_conv.hyena import HyenaStack


def build_h3(embedding_dim: int = 128, num_blocks: int = 2, **options) -> H3Stack:
    return H3Stack(CONFIGS["h3"](embedding_dim, num_blocks, **options))


def build_hyena(embedding_dim: int = 128, num_blocks: int = 2, **options) -> HyenaStack:
    return HyenaStack(CONFIGS["hyena"](embedding_dim, num_blocks, **options))


BACKBONES: dict[str, Callable[..., nn.Module]] = {"h3": build_h3, "hyena": build_hyena}
