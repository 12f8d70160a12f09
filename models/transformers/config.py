"""Configs of the Llama and GPT-3 backbones, by backbone name, and their size presets; validated on construction.

Torch-free, so that a run config is checked before torch is imported."""

import math
from dataclasses import dataclass, field
from typing import ClassVar, Literal

from models.config_checks import POSITIVE, ModelConfig, backbone_config

DEFAULT_HEAD_DIM = 64


class AttentionHeads(ModelConfig):
    """``num_heads`` of a Transformer config: None gives heads of 64 features (embedding_dim // 64, at least one); a
    given number must divide embedding_dim."""

    def resolve(self) -> None:
        if self.num_heads is None:
            self.num_heads = max(1, self.embedding_dim // DEFAULT_HEAD_DIM)

    def problems(self) -> list[str]:
        if self.embedding_dim % self.num_heads:
            return [
                f"{self.owner}.num_heads={self.num_heads} must be positive and divide "
                f"embedding_dim={self.embedding_dim}"
            ]
        return []


@dataclass
class LlamaConfig(AttentionHeads):
    """Llama: rotary positions (an even head dim), SwiGLU MLP of ``ffn_hidden_dim`` units, RMSNorm, no biases."""

    owner: ClassVar[str] = "llama"
    architecture: ClassVar[Literal["gpt3", "llama"]] = "llama"  # the parts of models.transformers.block and stack

    embedding_dim: int = field(default=128, metadata=POSITIVE)
    num_blocks: int = field(default=2, metadata=POSITIVE)
    num_heads: int | None = field(default=None, metadata=POSITIVE)  # None: embedding_dim // 64 (at least one)
    # None: 8/3 embedding_dim rounded up to a multiple of ffn_multiple_of
    ffn_hidden_dim: int | None = field(default=None, metadata=POSITIVE)
    ffn_multiple_of: int = field(default=64, metadata=POSITIVE)
    rope_theta: float = field(default=10000.0, metadata=POSITIVE)
    norm_eps: float = field(default=1e-5, metadata=POSITIVE)
    init_std: float = field(default=0.02, metadata=POSITIVE)

    def resolve(self) -> None:
        super().resolve()
        if self.ffn_hidden_dim is None:
            self.ffn_hidden_dim = self.ffn_multiple_of * math.ceil(8 * self.embedding_dim / 3 / self.ffn_multiple_of)

    def problems(self) -> list[str]:
        problems = super().problems()
        if not problems and (self.embedding_dim // self.num_heads) % 2:
            problems.append(
                f"llama.num_heads={self.num_heads} gives an odd head dim "
                f"{self.embedding_dim // self.num_heads}; rotary positions need an even one"
            )
        return problems


@dataclass
class GPT3Config(AttentionHeads):
    """GPT-3: learned positions for ``max_context_length`` tokens, GeLU MLP of ``ffn_factor * D`` units, LayerNorm."""

    owner: ClassVar[str] = "gpt3"
    architecture: ClassVar[Literal["gpt3", "llama"]] = "gpt3"  # the parts of models.transformers.block and stack

    embedding_dim: int = field(default=128, metadata=POSITIVE)
    num_blocks: int = field(default=2, metadata=POSITIVE)
    num_heads: int | None = field(default=None, metadata=POSITIVE)  # None: embedding_dim // 64 (at least one)
    ffn_factor: int = field(default=4, metadata=POSITIVE)
    max_context_length: int = field(default=2048, metadata=POSITIVE)
    norm_eps: float = field(default=1e-5, metadata=POSITIVE)
    init_std: float = field(default=0.02, metadata=POSITIVE)


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
