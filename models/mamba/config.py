"""Config of the Mamba backbone, by backbone name, and its size presets; validated on construction.

Torch-free, so that a run config is checked before torch is imported."""

import math
from dataclasses import dataclass, field
from typing import ClassVar, Literal

from models.config_checks import POSITIVE, ModelConfig, backbone_config

BACKENDS = ("auto", "torch", "mamba_ssm", "triton")


@dataclass
class MambaConfig(ModelConfig):
    """Mamba (Gu & Dao 2023) with the defaults of the reference implementation (``mamba_ssm``).

    Blocks ``x + mixer(RMSNorm(x))``, a final RMSNorm. The mixer projects up to 2 x ``expand * D`` (SSM
    branch and gate), runs a depthwise causal conv (with bias) + SiLU and the selective scan on the SSM
    branch, gates with SiLU(z) and projects down. ``dt_rank=None`` means the reference's ``ceil(D / 16)``.
    """

    owner: ClassVar[str] = "mamba"

    embedding_dim: int = field(default=128, metadata=POSITIVE)
    num_blocks: int = field(default=2, metadata=POSITIVE)
    state_dim: int = field(default=16, metadata=POSITIVE)
    conv_kernel_size: int = field(default=4, metadata=POSITIVE)
    expand: int = field(default=2, metadata=POSITIVE)
    dt_rank: int | None = field(default=None, metadata=POSITIVE)
    dt_min: float = field(default=0.001, metadata=POSITIVE)
    dt_max: float = field(default=0.1, metadata=POSITIVE)
    dt_init_floor: float = field(default=1e-4, metadata=POSITIVE)
    dt_scale: float = field(default=1.0, metadata=POSITIVE)
    proj_bias: bool = False
    norm_eps: float = field(default=1e-5, metadata=POSITIVE)
    chunk_size: int = field(default=8, metadata=POSITIVE)  # steps per chunk of the torch selective scan
    backend: Literal[BACKENDS] = "auto"

    def problems(self) -> list[str]:
        problems = []
        if self.dt_min > self.dt_max:
            problems.append(f"mamba.dt_min={self.dt_min!r} must not exceed mamba.dt_max={self.dt_max!r}")
        return problems

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
