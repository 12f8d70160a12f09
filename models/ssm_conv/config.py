"""Configs of the H3 and Hyena backbones, by backbone name, and their size presets; validated on construction.

Torch-free, so that a run config is checked before torch is imported."""

from dataclasses import dataclass, field
from typing import ClassVar, Literal

from models.config_checks import NOT_NEGATIVE, POSITIVE, ModelConfig, backbone_config

CONV_METHODS = ("fft", "direct")  # kernels.long_conv.METHODS, which imports torch
BACKENDS = ("auto", "torch")  # the backends of kernels.long_conv


@dataclass
class H3Config(ModelConfig):
    """H3 mixers (shift SSM, diagonal SSM over heads of ``head_dim`` channels) in GPT-style blocks."""

    owner: ClassVar[str] = "h3"

    embedding_dim: int = field(default=128, metadata=POSITIVE)
    num_blocks: int = field(default=2, metadata=POSITIVE)
    # N: length of the shift SSM, 2 x the complex modes of the diagonal SSM
    state_dim: int = field(default=64, metadata=POSITIVE)
    head_dim: int = field(default=1, metadata=POSITIVE)
    dt_min: float = field(default=0.001, metadata=POSITIVE)
    dt_max: float = field(default=0.1, metadata=POSITIVE)
    mlp_factor: int = field(default=4, metadata=POSITIVE)
    norm_eps: float = field(default=1e-5, metadata=POSITIVE)
    init_std: float = field(default=0.02, metadata=POSITIVE)
    conv_method: Literal[CONV_METHODS] = "fft"
    backend: Literal[BACKENDS] = "auto"

    def problems(self) -> list[str]:
        problems = []
        if self.state_dim % 2:
            problems.append(f"h3.state_dim={self.state_dim} must be even (the diagonal SSM has state_dim / 2 modes)")
        if self.embedding_dim % self.head_dim:
            problems.append(f"h3.head_dim={self.head_dim} must divide h3.embedding_dim={self.embedding_dim}")
        if self.dt_min > self.dt_max:
            problems.append(f"h3.dt_min={self.dt_min} must not exceed h3.dt_max={self.dt_max}")
        return problems


@dataclass
class HyenaConfig(ModelConfig):
    """Hyena operators of ``order`` (implicit long-convolution filters for ``max_length`` positions) in GPT-style
    blocks."""

    owner: ClassVar[str] = "hyena"

    embedding_dim: int = field(default=128, metadata=POSITIVE)
    num_blocks: int = field(default=2, metadata=POSITIVE)
    order: int = field(default=2, metadata={"at_least": 2})
    max_length: int = field(default=2048, metadata=POSITIVE)  # l_max: positions of the filters' positional encoding
    filter_width: int = field(default=64, metadata=POSITIVE)  # filter_order: width of the filter FFN
    # emb_dim: time plus (emb_dim - 1) / 2 cosine/sine bands; odd
    filter_embedding_dim: int = field(default=3, metadata={"at_least": 3})
    filter_sine_frequency: float = 1.0  # w
    filter_inner_layers: int = field(default=2, metadata=NOT_NEGATIVE)  # num_inner_mlps
    modulate: bool = True
    short_conv_size: int = field(default=3, metadata=POSITIVE)  # short_filter_order
    mlp_factor: int = field(default=4, metadata=POSITIVE)
    norm_eps: float = field(default=1e-5, metadata=POSITIVE)
    init_std: float = field(default=0.02, metadata=POSITIVE)
    conv_method: Literal[CONV_METHODS] = "fft"
    backend: Literal[BACKENDS] = "auto"

    def problems(self) -> list[str]:
        if self.filter_embedding_dim % 2 == 0:
            return [f"hyena.filter_embedding_dim={self.filter_embedding_dim} must be odd and at least 3"]
        return []


CONFIGS = {"h3": backbone_config(H3Config, "h3"), "hyena": backbone_config(HyenaConfig, "hyena")}

_PILE_HYENA_FILTER = dict(filter_embedding_dim=33, filter_sine_frequency=14.0, max_length=2048)

LANGUAGE_MODEL_PRESETS: dict[str, dict[str, dict]] = {
    "h3": {"350m": dict(embedding_dim=1024, num_blocks=24)},
    "hyena": {"350m": dict(embedding_dim=1024, num_blocks=24, order=3, **_PILE_HYENA_FILTER)},
}

TIED_EMBEDDINGS: set[str] = set()

# model name -> the paper's name (reports print it)
DISPLAY_NAMES = {"h3": "H3", "hyena": "Hyena"}
