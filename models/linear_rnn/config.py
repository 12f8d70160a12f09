"""Configs of the linear-RNN baselines (GLA, HGRN, HGRN2, RetNet, RWKV-6), by backbone name, and their size
presets; validated on construction.

Torch-free, so that a run config is checked before torch is imported. The layers are described in the
modules ``gla``, ``hgrn``, ``hgrn2``, ``retnet`` and ``rwkv6``; parameter counts in the package docstring.
"""

import math
from dataclasses import dataclass, field
from typing import ClassVar, Literal

from models.config_checks import POSITIVE, ModelConfig, backbone_config, divisible_problems

BACKENDS = ("auto", "torch", "fla")  # kernel backends of kernels.linear_attention


def scaled_dim_problems(owner: str, name: str, embedding_dim: int, ratio: float) -> list[str]:
    """A message unless embedding_dim * ratio is a positive integer (as flash-linear-attention asserts)."""
    value = embedding_dim * ratio
    if not math.isclose(value, round(value)) or round(value) <= 0:
        return [f"{owner}.{name}={ratio} times embedding_dim={embedding_dim} must be a positive integer; got {value}"]
    return []


def scaled_dim(owner: str, name: str, embedding_dim: int, ratio: float) -> int:
    """embedding_dim * ratio, which must be an integer (ValueError naming ``owner.name`` otherwise)."""
    problems = scaled_dim_problems(owner, name, embedding_dim, ratio)
    if problems:
        raise ValueError(problems[0])
    return round(embedding_dim * ratio)


class ExpandedKeyValue(ModelConfig):
    """Key and value widths ``embedding_dim`` x ``expand_k`` / ``expand_v`` (integers, as flash-linear-attention
    asserts) of the configs that have them, each divisible by the heads (``key_heads``: what divides the key width)."""

    key_heads: ClassVar[str] = "num_heads"

    @property
    def key_dim(self) -> int:
        return scaled_dim(self.owner, "expand_k", self.embedding_dim, self.expand_k)

    @property
    def value_dim(self) -> int:
        return scaled_dim(self.owner, "expand_v", self.embedding_dim, self.expand_v)

    def problems(self) -> list[str]:
        problems = scaled_dim_problems(self.owner, "expand_k", self.embedding_dim, self.expand_k) + scaled_dim_problems(
            self.owner, "expand_v", self.embedding_dim, self.expand_v
        )
        if problems:
            return problems
        problems = divisible_problems(
            self.owner, "key_dim", self.key_dim, self.key_heads, getattr(self, self.key_heads)
        )
        return problems or divisible_problems(self.owner, "value_dim", self.value_dim, "num_heads", self.num_heads)


@dataclass
class GLAConfig(ExpandedKeyValue):
    owner: ClassVar[str] = "gla"

    embedding_dim: int = field(default=128, metadata=POSITIVE)
    num_blocks: int = field(default=2, metadata=POSITIVE)
    num_heads: int = field(default=4, metadata=POSITIVE)
    expand_k: float = 0.5
    expand_v: float = 1.0
    gate_low_rank_dim: int = field(default=16, metadata=POSITIVE)
    gate_logit_normalizer: float = field(default=16.0, metadata=POSITIVE)
    hidden_ratio: float = field(default=4.0, metadata=POSITIVE)  # SwiGLU MLP size, see ``common.swiglu_hidden_dim``
    norm_eps: float = field(default=1e-6, metadata=POSITIVE)
    # 8 was fastest on CPU for E = 64 (the 3-D decay tensor grows with it)
    chunk_size: int = field(default=8, metadata=POSITIVE)
    backend: Literal[BACKENDS] = "auto"


@dataclass
class HGRNConfig(ModelConfig):
    owner: ClassVar[str] = "hgrn"

    embedding_dim: int = field(default=128, metadata=POSITIVE)
    num_blocks: int = field(default=2, metadata=POSITIVE)
    expand_ratio: float = field(default=1.0, metadata=POSITIVE)
    use_lower_bound: bool = True
    hidden_ratio: float = field(default=4.0, metadata=POSITIVE)  # SwiGLU MLP size, see ``common.swiglu_hidden_dim``
    norm_eps: float = field(default=1e-6, metadata=POSITIVE)
    # 8 was fastest on CPU for E = 64 (the 3-D decay tensor grows with it)
    chunk_size: int = field(default=8, metadata=POSITIVE)
    backend: Literal[BACKENDS] = "auto"

    def problems(self) -> list[str]:
        return scaled_dim_problems("hgrn", "expand_ratio", self.embedding_dim, self.expand_ratio)

    @property
    def inner_dim(self) -> int:
        return scaled_dim("hgrn", "expand_ratio", self.embedding_dim, self.expand_ratio)


@dataclass
class HGRN2Config(ModelConfig):
    owner: ClassVar[str] = "hgrn2"

    embedding_dim: int = field(default=128, metadata=POSITIVE)
    num_blocks: int = field(default=2, metadata=POSITIVE)
    expand_ratio: int = field(default=128, metadata=POSITIVE)  # key dims per head, i.e. the state expansion
    use_lower_bound: bool = True
    hidden_ratio: float = field(default=4.0, metadata=POSITIVE)  # SwiGLU MLP size, see ``common.swiglu_hidden_dim``
    norm_eps: float = field(default=1e-6, metadata=POSITIVE)
    # 8 was fastest on CPU for E = 64 (the 3-D decay tensor grows with it)
    chunk_size: int = field(default=8, metadata=POSITIVE)
    backend: Literal[BACKENDS] = "auto"

    def problems(self) -> list[str]:
        return divisible_problems("hgrn2", "embedding_dim", self.embedding_dim, "expand_ratio", self.expand_ratio)

    @property
    def num_heads(self) -> int:
        return self.embedding_dim // self.expand_ratio


@dataclass
class RetNetConfig(ExpandedKeyValue):
    owner: ClassVar[str] = "retnet"

    embedding_dim: int = field(default=128, metadata=POSITIVE)
    num_blocks: int = field(default=2, metadata=POSITIVE)
    num_heads: int = field(default=8, metadata=POSITIVE)
    expand_k: float = 1.0
    expand_v: float = 2.0
    hidden_ratio: float = field(default=2.0, metadata=POSITIVE)  # SwiGLU MLP size, see ``common.swiglu_hidden_dim``
    rope_base: float = field(default=10000.0, metadata=POSITIVE)
    norm_eps: float = field(default=1e-6, metadata=POSITIVE)
    chunk_size: int = field(default=64, metadata=POSITIVE)
    backend: Literal[BACKENDS] = "auto"

    def problems(self) -> list[str]:
        problems = super().problems()
        if not problems and (self.key_dim // self.num_heads) % 2:
            problems.append(
                f"retnet: the head key dim key_dim/num_heads={self.key_dim // self.num_heads} must be even "
                "for rotary positions"
            )
        return problems


@dataclass
class RWKV6Config(ExpandedKeyValue):
    owner: ClassVar[str] = "rwkv6"
    key_heads: ClassVar[str] = "head_size"

    embedding_dim: int = field(default=128, metadata=POSITIVE)
    num_blocks: int = field(default=2, metadata=POSITIVE)
    head_size: int = field(default=64, metadata=POSITIVE)
    expand_k: float = 1.0
    expand_v: float = 1.0
    # channel-mix size: hidden_ratio * D rounded up to a multiple of 32
    hidden_ratio: float = field(default=3.5, metadata=POSITIVE)
    proj_low_rank_dim: int = field(default=32, metadata=POSITIVE)  # ddlerp LoRA rank per target
    gate_low_rank_dim: int = field(default=64, metadata=POSITIVE)  # decay LoRA rank
    norm_eps: float = field(default=1e-5, metadata=POSITIVE)
    group_norm_eps: float = field(default=64e-5, metadata=POSITIVE)  # official: 1e-5 * head_size_divisor^2, divisor 8
    # 8 was fastest on CPU for E = 64 (the 3-D decay tensor grows with it)
    chunk_size: int = field(default=8, metadata=POSITIVE)
    backend: Literal[BACKENDS] = "auto"

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
