"""Config of the RWKV-4 backbone, by backbone name, and its size presets; validated on construction.

Torch-free, so that a run config is checked before torch is imported."""

from dataclasses import dataclass

from models.config_checks import backbone_config, check_choice, check_positive

BACKENDS = ("auto", "torch")


@dataclass
class RWKV4Config:
    """RWKV-4 (Peng et al. 2023) as in the reference repository (BlinkDL/RWKV-LM, RWKV-v4neo).

    An input LayerNorm (``ln0``), then blocks ``x + time_mix(LN(x))``, ``x + channel_mix(LN(x))``, and a
    final LayerNorm. The channel mix has ``ffn_proj_factor * D`` hidden units (the reference's 4 D).
    """

    embedding_dim: int = 128
    num_blocks: int = 2
    ffn_proj_factor: float = 4.0
    norm_eps: float = 1e-5
    chunk_size: int = 8  # steps per chunk of the torch WKV kernel (CPU, E=64: 4-8 fastest)
    backend: str = "auto"

    def __post_init__(self):
        for name in ("embedding_dim", "num_blocks", "ffn_proj_factor", "norm_eps", "chunk_size"):
            check_positive("rwkv4", name, getattr(self, name))
        if self.ffn_inner_dim != self.ffn_proj_factor * self.embedding_dim:
            raise ValueError(
                f"rwkv4.ffn_proj_factor={self.ffn_proj_factor!r} times embedding_dim={self.embedding_dim} must be a "
                f"whole number of channel-mix units"
            )
        check_choice("rwkv4", "backend", self.backend, BACKENDS)

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
