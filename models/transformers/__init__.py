"""Transformer baselines: Llama (rotary, SwiGLU, RMSNorm) and GPT-3 (learned positions, GeLU, LayerNorm, tied).

Presets: Table spaj_peaklr (Llama, 125M to 2.7B) and Table spaj15b_model_results (GPT-3, 350M = GPT-3 Medium).
"""

import dataclasses
from typing import Callable

from torch import nn

from models.transformers.attention import CausalSelfAttention, KVCache
from models.transformers.gpt import GPT3Block, GPT3Config, GPT3Stack
from models.transformers.llama import LlamaBlock, LlamaConfig, LlamaStack


def _config(config_class: type, family: str, options: dict):
    valid = [field.name for field in dataclasses.fields(config_class)]
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise ValueError(f"unknown {family} option(s) {unknown}; valid choices: {valid}")
    return config_class(**options)


def build_llama(embedding_dim: int = 128, num_blocks: int = 2, **options) -> LlamaStack:
    return LlamaStack(_config(LlamaConfig, "llama", dict(embedding_dim=embedding_dim, num_blocks=num_blocks, **options)))


def build_gpt3(embedding_dim: int = 128, num_blocks: int = 2, **options) -> GPT3Stack:
    return GPT3Stack(_config(GPT3Config, "gpt3", dict(embedding_dim=embedding_dim, num_blocks=num_blocks, **options)))


BACKBONES: dict[str, Callable[..., nn.Module]] = {"llama": build_llama, "gpt3": build_gpt3}

# Table spaj_peaklr: embedding dim, blocks, heads / head dim.
LANGUAGE_MODEL_PRESETS: dict[str, dict[str, dict]] = {
    "llama": {
        "125m": dict(embedding_dim=768, num_blocks=12, num_heads=12),
        "350m": dict(embedding_dim=1024, num_blocks=24, num_heads=16),
        "760m": dict(embedding_dim=1536, num_blocks=24, num_heads=16),
        "1.3b": dict(embedding_dim=2048, num_blocks=24, num_heads=16),
        "2.7b": dict(embedding_dim=2560, num_blocks=32, num_heads=32),
    },
    # Section 4.3: "embedding dim 1024 and 24 residual blocks"; 16 heads of 64 as GPT-3 Medium.
    "gpt3": {"350m": dict(embedding_dim=1024, num_blocks=24, num_heads=16, max_context_length=2048)},
}

TIED_EMBEDDINGS = {"gpt3"}

__all__ = [
    "BACKBONES",
    "LANGUAGE_MODEL_PRESETS",
    "TIED_EMBEDDINGS",
    "CausalSelfAttention",
    "GPT3Block",
    "GPT3Config",
    "GPT3Stack",
    "KVCache",
    "LlamaBlock",
    "LlamaConfig",
    "LlamaStack",
    "build_gpt3",
    "build_llama",
]
