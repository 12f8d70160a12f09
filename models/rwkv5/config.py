"""Config of the RWKV-5 backbone, by backbone name, and its size presets; validated on construction.

Torch-free, so that a run config is checked before torch is imported. The model is described in ``block``,
the presets in the package docstring.
"""

from dataclasses import dataclass

from models.config_checks import backbone_config, check_choice, check_positive

BACKENDS = ("auto", "torch")  # kernel backends of kernels.wkv5


@dataclass
class RWKV5Config:
    embedding_dim: int = 128
    num_blocks: int = 2
    head_size: int = 64
    head_size_divisor: float = 8.0
    ffn_dim: int | None = None  # None: 4 D rounded down to a multiple of 32
    norm_eps: float = 1e-5
    chunk_size: int = 16
    backend: str = "auto"

    def __post_init__(self):
        for name in ("embedding_dim", "num_blocks", "head_size", "head_size_divisor", "norm_eps", "chunk_size"):
            check_positive("rwkv5", name, getattr(self, name))
        check_choice("rwkv5", "backend", self.backend, BACKENDS)
        if self.embedding_dim % self.head_size:
            raise ValueError(f"rwkv5.head_size={self.head_size} must divide rwkv5.embedding_dim={self.embedding_dim}")
        if self.ffn_dim is None:
            self.ffn_dim = max(32, 4 * self.embedding_dim // 32 * 32)
        check_positive("rwkv5", "ffn_dim", self.ffn_dim)

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
