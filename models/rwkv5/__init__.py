"""RWKV-5 "Eagle" (Peng et al. 2024): multi-head matrix-valued WKV time mixing and RWKV channel mixing.

Presets: Table spaj_peaklr (untied head, GPT-2 vocabulary padded to 50304), heads of 64, channel mix 4 D.
The table gives 2048 / 24 for the 2.7B model, the same dimensions as 1.3B (1616.0M); its 3194.7M are reached
by 2560 / 32 (the dimensions of the other 2.7B models in the table), which the preset uses.
"""

import dataclasses
from typing import Callable

from torch import nn

from models.rwkv5.block import ChannelMix, RWKV5Block, RWKV5Config, RWKV5Stack, TimeMix


def build_rwkv5(embedding_dim: int = 128, num_blocks: int = 2, **options) -> RWKV5Stack:
    valid = [field.name for field in dataclasses.fields(RWKV5Config)]
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise ValueError(f"unknown rwkv5 option(s) {unknown}; valid choices: {valid}")
    return RWKV5Stack(RWKV5Config(embedding_dim=embedding_dim, num_blocks=num_blocks, **options))


BACKBONES: dict[str, Callable[..., nn.Module]] = {"rwkv5": build_rwkv5}

LANGUAGE_MODEL_PRESETS: dict[str, dict[str, dict]] = {
    "rwkv5": {
        "125m": dict(embedding_dim=768, num_blocks=12),
        "350m": dict(embedding_dim=1024, num_blocks=24),
        "760m": dict(embedding_dim=1536, num_blocks=24),
        "1.3b": dict(embedding_dim=2048, num_blocks=24),
        "2.7b": dict(embedding_dim=2560, num_blocks=32),
    }
}

TIED_EMBEDDINGS: set[str] = set()

__all__ = [
    "BACKBONES",
    "LANGUAGE_MODEL_PRESETS",
    "TIED_EMBEDDINGS",
    "ChannelMix",
    "RWKV5Block",
    "RWKV5Config",
    "RWKV5Stack",
    "TimeMix",
    "build_rwkv5",
]
