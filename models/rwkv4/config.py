"""Config of the RWKV-4 backbone, by backbone name, and its size presets; validated on construction.

Torch-free, so that a run config is checked before torch is imported."""

from dataclasses import dataclass, field
from typing import ClassVar, Literal

from models.config_checks import POSITIVE, ModelConfig, backbone_config

BACKENDS = ("auto", "torch")


@dataclass
class RWKV4Config(ModelConfig):
    """RWKV-4 (Peng et al. 2023) as in the reference repository (BlinkDL/RWKV-LM, RWKV-v4neo).

    An input LayerNorm (``ln0``), then blocks ``x + time_mix(LN(x))``, ``x + channel_mix(LN(x))``, and a
    final LayerNorm. The channel mix has ``ffn_proj_factor * D`` hidden units (the reference's 4 D).
    """

    owner: ClassVar[str] = "rwkv4"

    embedding_dim: int = field(default=128, metadata=POSITIVE)
    num_blocks: int = field(default=2, metadata=POSITIVE)
    ffn_proj_factor: float = field(default=4.0, metadata=POSITIVE)
    norm_eps: float = field(default=1e-5, metadata=POSITIVE)
    chunk_size: int = field(default=8, metadata=POSITIVE)  # steps per chunk of the torch WKV kernel (CPU, E=64: 4-8)
    backend: Literal[BACKENDS] = "auto"

    def problems(self) -> list[str]:
        if self.ffn_inner_dim != self.ffn_proj_factor * self.embedding_dim:
            return [
                f"rwkv4.ffn_proj_factor={self.ffn_proj_factor!r} times embedding_dim={self.embedding_dim} must be "
                "a whole number of channel-mix units"
            ]
        return []

    @property
    def ffn_inner_dim(self) -> int:
        return int(self.ffn_proj_factor * self.embedding_dim)


CONFIGS = {"rwkv4": backbone_config(RWKV4Config, "rwkv4")}

# Table spaj_peaklr: embedding dim and blocks per size; untied head over the GPT-2 vocabulary padded to 50304.
LANGUAGE_MODEL_PRESETS = {
    "rwkv4": {
        "125m": {"embedding_dim": 768, "num_blocks": 12},
        "350m": {"embedding_dim": 1024, "num_blocks": 24},
        "760m": {"embedding_dim": 1536, "num_blocks": 24},
        "1.3b": {"embedding_dim": 2048, "num_blocks": 24},
        "2.7b": {"embedding_dim": 2560, "num_blocks": 32},
    }
}

TIED_EMBEDDINGS: set[str] = set()

# model name -> the paper's name (reports print it)
DISPLAY_NAMES = {"rwkv4": "RWKV-4"}
