"""Configs of the Llama and GPT-3 backbones, by backbone name, and their size presets; validated on construction.

Torch-free, so that a run config is checked before torch is imported."""

import math
from dataclasses import dataclass
from typing import ClassVar, Literal

from models.config_checks import backbone_config, check_positive

DEFAULT_HEAD_DIM = 64


def resolved_num_heads(owner: str, embedding_dim: int, num_heads: int | None) -> int:
    """``num_heads``, or embedding_dim // 64 heads (at least one) when None; it must divide embedding_dim."""
    if num_heads is None:
        return max(1, embedding_dim // DEFAULT_HEAD_DIM)
    if num_heads <= 0 or embedding_dim % num_heads:
        raise ValueError(f"{owner}.num_heads={num_heads} must be positive and divide embedding_dim={embedding_dim}")
    return num_heads


@dataclass
class LlamaConfig:
    """Llama: rotary positions (an even head dim), SwiGLU MLP of ``ffn_hidden_dim`` units, RMSNorm, no biases."""

    architecture: ClassVar[Literal["gpt3", "llama"]] = "llama"  # the parts of models.transformers.block and stack
    embedding_dim: int = 128
    num_blocks: int = 2
    num_heads: int | None = None  # None: embedding_dim // 64 heads (at least one)
    ffn_hidden_dim: int | None = None  # None: 8/3 embedding_dim rounded up to a multiple of ffn_multiple_of
    ffn_multiple_of: int = 64
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5
    init_std: float = 0.02

    def __post_init__(self):
        for name in ("embedding_dim", "num_blocks", "ffn_multiple_of", "rope_theta", "norm_eps", "init_std"):
            check_positive("llama", name, getattr(self, name))
        self.num_heads = resolved_num_heads("llama", self.embedding_dim, self.num_heads)
        if (self.embedding_dim // self.num_heads) % 2:
            raise ValueError(f"llama.num_heads={self.num_heads} gives an odd head dim "
                             f"{self.embedding_dim // self.num_heads}; rotary positions need an even one")
        if self.ffn_hidden_dim is None:
            self.ffn_hidden_dim = self.ffn_multiple_of * math.ceil(8 * self.embedding_dim / 3 / self.ffn_multiple_of)
        check_positive("llama", "ffn_hidden_dim", self.ffn_hidden_dim)


@dataclass
class GPT3Config:
    """GPT-3: learned positions for ``max_context_length`` tokens, GeLU MLP of ``ffn_factor * D`` units, LayerNorm."""

    architecture: ClassVar[Literal["gpt3", "llama"]] = "gpt3"  # the parts of models.transformers.block and stack
    embedding_dim: int = 128
    num_blocks: int = 2
    num_heads: int | None = None  # None: embedding_dim // 64 heads (at least one)
    ffn_factor: int = 4
    max_context_length: int = 2048
    norm_eps: float = 1e-5
    init_std: float = 0.02

    def __post_init__(self):
        for name in ("embedding_dim", "num_blocks", "ffn_factor", "max_context_length", "norm_eps", "init_std"):
            check_positive("gpt3", name, getattr(self, name))
        self.num_heads = resolved_num_heads("gpt3", self.embedding_dim, self.num_heads)


CONFIGS = {"llama": backbone_config(LlamaConfig, "llama"), "gpt3": backbone_config(GPT3Config, "gpt3")}

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

# model name -> the paper's name (reports print it)
DISPLAY_NAMES = {"llama": "Llama", "gpt3": "GPT-3"}
