"""Configs of the linear-RNN baselines (GLA, HGRN, HGRN2, RetNet, RWKV-6), by backbone name, and their size
presets; validated on construction.

Torch-free, so that a run config is checked before torch is imported. The layers are described in the
modules ``gla``, ``hgrn``, ``hgrn2``, ``retnet`` and ``rwkv6``; parameter counts in the package docstring.
"""

import math
from dataclasses import dataclass
from typing import ClassVar

from models.config_checks import backbone_config, check_choice, check_divisible, check_positive

BACKENDS = ("auto", "torch", "fla")  # kernel backends of kernels.linear_attention


def scaled_dim(owner: str, name: str, embedding_dim: int, ratio: float) -> int:
    """embedding_dim * ratio, which must be an integer (as flash-linear-attention asserts)."""
    value = embedding_dim * ratio
    if not math.isclose(value, round(value)) or round(value) <= 0:
        raise ValueError(
            f"{owner}.{name}={ratio} times embedding_dim={embedding_dim} must be a positive integer; got {value}"
        )
    return round(value)


class ExpandedKeyValue:
    """Key and value widths ``embedding_dim`` x ``expand_k`` / ``expand_v`` (integers, as flash-linear-attention
    asserts) of the configs that have them; ``owner`` names the model in errors."""

    owner: ClassVar[str]

    @property
    def key_dim(self) -> int:
        return scaled_dim(self.owner, "expand_k", self.embedding_dim, self.expand_k)

    @property
    def value_dim(self) -> int:
        return scaled_dim(self.owner, "expand_v", self.embedding_dim, self.expand_v)


@dataclass
class GLAConfig(ExpandedKeyValue):
    owner: ClassVar[str] = "gla"

    embedding_dim: int = 128
    num_blocks: int = 2
    num_heads: int = 4
    expand_k: float = 0.5
    expand_v: float = 1.0
    gate_low_rank_dim: int = 16
    gate_logit_normalizer: float = 16.0
    hidden_ratio: float = 4.0  # SwiGLU MLP size, see ``common.swiglu_hidden_dim``
    norm_eps: float = 1e-6
    chunk_size: int = 8  # 8 was fastest on CPU for E = 64 (the 3-D decay tensor grows with it)
    backend: str = "auto"

    def __post_init__(self):
        for name in (
            "embedding_dim",
            "num_blocks",
            "num_heads",
            "gate_low_rank_dim",
            "gate_logit_normalizer",
            "hidden_ratio",
            "norm_eps",
            "chunk_size",
        ):
            check_positive("gla", name, getattr(self, name))
        check_choice("gla", "backend", self.backend, BACKENDS)
        check_divisible("gla", "key_dim", self.key_dim, "num_heads", self.num_heads)
        check_divisible("gla", "value_dim", self.value_dim, "num_heads", self.num_heads)


@dataclass
class HGRNConfig:
    embedding_dim: int = 128
    num_blocks: int = 2
    expand_ratio: float = 1.0
    use_lower_bound: bool = True
    hidden_ratio: float = 4.0  # SwiGLU MLP size, see ``common.swiglu_hidden_dim``
    norm_eps: float = 1e-6
    chunk_size: int = 8  # 8 was fastest on CPU for E = 64 (the 3-D decay tensor grows with it)
    backend: str = "auto"

    def __post_init__(self):
        for name in ("embedding_dim", "num_blocks", "expand_ratio", "hidden_ratio", "norm_eps", "chunk_size"):
            check_positive("hgrn", name, getattr(self, name))
        check_choice("hgrn", "use_lower_bound", self.use_lower_bound, (True, False))
        check_choice("hgrn", "backend", self.backend, BACKENDS)
        scaled_dim("hgrn", "expand_ratio", self.embedding_dim, self.expand_ratio)  # raises unless an integer

    @property
    def inner_dim(self) -> int:
        return scaled_dim("hgrn", "expand_ratio", self.embedding_dim, self.expand_ratio)


@dataclass
class HGRN2Config:
    embedding_dim: int = 128
    num_blocks: int = 2
    expand_ratio: int = 128  # key dims per head, i.e. the state expansion
    use_lower_bound: bool = True
    hidden_ratio: float = 4.0  # SwiGLU MLP size, see ``common.swiglu_hidden_dim``
    norm_eps: float = 1e-6
    chunk_size: int = 8  # 8 was fastest on CPU for E = 64 (the 3-D decay tensor grows with it)
    backend: str = "auto"

    def __post_init__(self):
        for name in ("embedding_dim", "num_blocks", "expand_ratio", "hidden_ratio", "norm_eps", "chunk_size"):
            check_positive("hgrn2", name, getattr(self, name))
        check_choice("hgrn2", "use_lower_bound", self.use_lower_bound, (True, False))
        check_choice("hgrn2", "backend", self.backend, BACKENDS)
        check_divisible("hgrn2", "embedding_dim", self.embedding_dim, "expand_ratio", self.expand_ratio)

    @property
    def num_heads(self) -> int:
        return self.embedding_dim // self.expand_ratio


@dataclass
class RetNetConfig(ExpandedKeyValue):
    owner: ClassVar[str] = "retnet"

    embedding_dim: int = 128
    num_blocks: int = 2
    num_heads: int = 8
    expand_k: float = 1.0
    expand_v: float = 2.0
    hidden_ratio: float = 2.0  # SwiGLU MLP size, see ``common.swiglu_hidden_dim``
    rope_base: float = 10000.0
    norm_eps: float = 1e-6
    chunk_size: int = 64
    backend: str = "auto"

    def __post_init__(self):
        for name in ("embedding_dim", "num_blocks", "num_heads", "hidden_ratio", "rope_base", "norm_eps", "chunk_size"):
            check_positive("retnet", name, getattr(self, name))
        check_choice("retnet", "backend", self.backend, BACKENDS)
        check_divisible("retnet", "key_dim", self.key_dim, "num_heads", self.num_heads)
        check_divisible("retnet", "value_dim", self.value_dim, "num_heads", self.num_heads)
        if (self.key_dim // self.num_heads) % 2:
            raise ValueError(
                f"retnet: the head key dim key_dim/num_heads={self.key_dim // self.num_heads} must be even "
                "for rotary positions"
            )


@dataclass
class RWKV6Config(ExpandedKeyValue):
    owner: ClassVar[str] = "rwkv6"

    embedding_dim: int = 128
    num_blocks: int = 2
    head_size: int = 64
    expand_k: float = 1.0
    expand_v: float = 1.0
    hidden_ratio: float = 3.5  # channel-mix size: hidden_ratio * D rounded up to a multiple of 32
    proj_low_rank_dim: int = 32  # ddlerp LoRA rank per target
    gate_low_rank_dim: int = 64  # decay LoRA rank
    norm_eps: float = 1e-5
    group_norm_eps: float = 64e-5  # official: 1e-5 * head_size_divisor^2, divisor 8
    chunk_size: int = 8  # 8 was fastest on CPU for E = 64 (the 3-D decay tensor grows with it)
    backend: str = "auto"

    def __post_init__(self):
        for name in (
            "embedding_dim",
            "num_blocks",
            "head_size",
            "hidden_ratio",
            "proj_low_rank_dim",
            "gate_low_rank_dim",
            "norm_eps",
            "group_norm_eps",
            "chunk_size",
        ):
            check_positive("rwkv6", name, getattr(self, name))
        check_choice("rwkv6", "backend", self.backend, BACKENDS)
        check_divisible("rwkv6", "key_dim", self.key_dim, "head_size", self.head_size)
        check_divisible("rwkv6", "value_dim", self.value_dim, "num_heads", self.num_heads)

    @property
    def num_heads(self) -> int:
        return self.key_dim // self.head_size

    @property
    def ffn_dim(self) -> int:
        return 32 * -(-int(self.embedding_dim * self.hidden_ratio) // 32)


CONFIGS = {
    "gla": backbone_config(GLAConfig, "gla"),
    "hgrn": backbone_config(HGRNConfig, "hgrn"),
    "hgrn2": backbone_config(HGRN2Config, "hgrn2"),
    "retnet": backbone_config(RetNetConfig, "retnet"),
    "rwkv6": backbone_config(RWKV6Config, "rwkv6"),
}

_SCALING_SHAPES = {  # Table spaj_peaklr (2.7B: see the package docstring)
    "125m": dict(embedding_dim=768, num_blocks=12),
    "350m": dict(embedding_dim=1024, num_blocks=24),
    "760m": dict(embedding_dim=1536, num_blocks=24),
    "1.3b": dict(embedding_dim=2048, num_blocks=24),
    "2.7b": dict(embedding_dim=2560, num_blocks=32),
}

LANGUAGE_MODEL_PRESETS = {
    "rwkv6": {size: dict(shape) for size, shape in _SCALING_SHAPES.items()},
    "hgrn2": {size: dict(shape) for size, shape in _SCALING_SHAPES.items()},
    "gla": {"350m": dict(embedding_dim=1024, num_blocks=24)},
    "hgrn": {"350m": dict(embedding_dim=1024, num_blocks=24)},
    "retnet": {"350m": dict(embedding_dim=1024, num_blocks=24)},
}

TIED_EMBEDDINGS: set[str] = set()

# model name -> the paper's name (reports print it; the paper calls RetNet's layer "Retention")
DISPLAY_NAMES = {"gla": "GLA", "hgrn": "HGRN", "hgrn2": "HGRN2", "retnet": "Retention", "rwkv6": "RWKV-6"}
