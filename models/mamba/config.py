"""Config of the Mamba backbone, by backbone name, and its size presets; validated on construction.

Torch-free, so that a run config is checked before torch is imported."""

import math
from dataclasses import dataclass

from models.config_checks import backbone_config, check_choice, check_positive

BACKENDS = ("auto", "torch", "mamba_ssm", "triton")


@dataclass
class MambaConfig:
    """Mamba (Gu & Dao 2023) with the defaults of the reference implementation (``mamba_ssm``).

    Blocks ``x + mixer(RMSNorm(x))``, a final RMSNorm. The mixer projects up to 2 x ``expand * D`` (SSM
    branch and gate), runs a depthwise causal conv (with bias) + SiLU and the selective scan on the SSM
    branch, gates with SiLU(z) and projects down. ``dt_rank=None`` means the reference's ``ceil(D / 16)``.
    """

    embedding_dim: int = 128
    num_blocks: int = 2
    state_dim: int = 16
    conv_kernel_size: int = 4
    expand: int = 2
    dt_rank: int | None = None
    dt_min: float = 0.001
    dt_max: float = 0.1
    dt_init_floor: float = 1e-4
    dt_scale: float = 1.0
    proj_bias: bool = False
    norm_eps: float = 1e-5
    chunk_size: int = 8  # steps per chunk of the torch selective scan (a power of two)
    backend: str = "auto"

    def __post_init__(self):
        for name in ("embedding_dim", "num_blocks", "state_dim", "conv_kernel_size", "expand", "dt_min", "dt_max",
                     "dt_init_floor", "dt_scale", "norm_eps", "chunk_size"):
            check_positive("mamba", name, getattr(self, name))
        if self.dt_rank is not None:
            check_positive("mamba", "dt_rank", self.dt_rank)
        if self.dt_min > self.dt_max:
            raise ValueError(f"mamba.dt_min={self.dt_min!r} must not exceed mamba.dt_max={self.dt_max!r}")
        if self.chunk_size & (self.chunk_size - 1):
            raise ValueError(f"mamba.chunk_size={self.chunk_size!r} must be a power of two (1, 2, 4, 8, ...)")
        check_choice("mamba", "backend", self.backend, BACKENDS)

    @property
    def inner_dim(self) -> int:
        return self.expand * self.embedding_dim

    @property
    def resolved_dt_rank(self) -> int:
        return self.dt_rank if self.dt_rank is not None else math.ceil(self.embedding_dim / 16)


CONFIGS = {"mamba": backbone_config(MambaConfig, "mamba")}

# Table spaj_peaklr: embedding dim and blocks per size; untied head over the GPT-2 vocabulary padded to 50304.
LANGUAGE_MODEL_PRESETS = {
    "mamba": {
        "125m": {"embedding_dim": 768, "num_blocks": 24},
        "350m": {"embedding_dim": 1024, "num_blocks": 48},
        "760m": {"embedding_dim": 1536, "num_blocks": 48},
        "1.3b": {"embedding_dim": 2048, "num_blocks": 48},
        "2.7b": {"embedding_dim": 2560, "num_blocks": 64},
    }
}

TIED_EMBEDDINGS: set[str] = set()

# model name -> the paper's name (reports print it); configs/model/mamba_tied.yaml is Mamba with its decoder tied to
# the token embedding, the associative-recall figures' "Mamba" beside "Mamba (noWT)"
DISPLAY_NAMES = {"mamba": "Mamba", "mamba_tied": "Mamba (WT)"}
