"""Config of the RWKV-5 backbone, by backbone name, and its size presets; validated on construction.

Torch-free, so that a run config is checked before torch is imported. The model is described in ``block``,
the presets in the package docstring.
"""

from dataclasses import dataclass, field
from typing import ClassVar, Literal

from models.config_checks import POSITIVE, ModelConfig, backbone_config

BACKENDS = ("auto", "torch")  # kernel backends of kernels.wkv5


@dataclass
class RWKV5Config(ModelConfig):
    owner: ClassVar[str] = "rwkv5"

    embedding_dim: int = field(default=128, metadata=POSITIVE)
    num_blocks: int = field(default=2, metadata=POSITIVE)
    head_size: int = field(default=64, metadata=POSITIVE)
    head_size_divisor: float = field(default=8.0, metadata=POSITIVE)
    ffn_dim: int | None = field(default=None, metadata=POSITIVE)  # None: 4 D rounded down to a multiple of 32
    norm_eps: float = field(default=1e-5, metadata=POSITIVE)
    chunk_size: int = field(default=16, metadata=POSITIVE)
    backend: Literal[BACKENDS] = "auto"

    def resolve(self) -> None:
        if self.ffn_dim is None:
            self.ffn_dim = max(32, 4 * self.embedding_dim // 32 * 32)

    def problems(self) -> list[str]:
        if self.embedding_dim % self.head_size:
            return [f"rwkv5.head_size={self.head_size} must divide rwkv5.embedding_dim={self.embedding_dim}"]
        return []

    @property
    def num_heads(self) -> int:
        return self.embedding_dim // self.head_size


CONFIGS = {"rwkv5": backbone_config(RWKV5Config, "rwkv5")}

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

# model name -> the paper's name (reports print it)
DISPLAY_NAMES = {"rwkv5": "RWKV-5"}
