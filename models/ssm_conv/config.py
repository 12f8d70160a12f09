"""Configs of the H3 and Hyena backbones, by backbone name, and their size presets; validated on construction.

Torch-free, so that a run config is checked before torch is imported."""

from dataclasses import dataclass

from models.config_checks import backbone_config, check_choice, check_positive

CONV_METHODS = ("fft", "direct")  # kernels.long_conv.METHODS, which imports torch
BACKENDS = ("auto", "torch")  # the backends of kernels.long_conv


@dataclass
class H3Config:
    """H3 mixers (shift SSM, diagonal SSM over heads of ``head_dim`` channels) in GPT-style blocks."""

    embedding_dim: int = 128
    num_blocks: int = 2
    state_dim: int = 64  # N: length of the shift SSM, 2 x the complex modes of the diagonal SSM
    head_dim: int = 1
    dt_min: float = 0.001
    dt_max: float = 0.1
    mlp_factor: int = 4
    norm_eps: float = 1e-5
    init_std: float = 0.02
    conv_method: str = "fft"
    backend: str = "auto"

    def __post_init__(self):
        for name in ("embedding_dim", "num_blocks", "state_dim", "head_dim", "dt_min", "dt_max", "mlp_factor",
                     "norm_eps", "init_std"):
            check_positive("h3", name, getattr(self, name))
        check_choice("h3", "conv_method", self.conv_method, CONV_METHODS)
        check_choice("h3", "backend", self.backend, BACKENDS)
        if self.state_dim % 2:
            raise ValueError(f"h3.state_dim={self.state_dim} must be even (the diagonal SSM has state_dim / 2 modes)")
        if self.embedding_dim % self.head_dim:
            raise ValueError(f"h3.head_dim={self.head_dim} must divide h3.embedding_dim={self.embedding_dim}")
        if self.dt_min > self.dt_max:
            raise ValueError(f"h3.dt_min={self.dt_min} must not exceed h3.dt_max={self.dt_max}")


@dataclass
class HyenaConfig:
    """Hyena operators of ``order`` (implicit long-convolution filters for ``max_length`` positions) in GPT-style
    blocks."""

    embedding_dim: int = 128
    num_blocks: int = 2
    order: int = 2
    max_length: int = 2048  # l_max: positions of the filters' positional encoding
    filter_width: int = 64  # filter_order: width of the filter FFN
    filter_embedding_dim: int = 3  # emb_dim: time plus (emb_dim - 1) / 2 cosine/sine bands; odd, >= 3
    filter_sine_frequency: float = 1.0  # w
    filter_inner_layers: int = 2  # num_inner_mlps
    modulate: bool = True
    short_conv_size: int = 3  # short_filter_order
    mlp_factor: int = 4
    norm_eps: float = 1e-5
    init_std: float = 0.02
    conv_method: str = "fft"
    backend: str = "auto"

    def __post_init__(self):
        for name in ("embedding_dim", "num_blocks", "max_length", "filter_width", "short_conv_size", "mlp_factor",
                     "norm_eps", "init_std"):
            check_positive("hyena", name, getattr(self, name))
        check_choice("hyena", "conv_method", self.conv_method, CONV_METHODS)
        check_choice("hyena", "backend", self.backend, BACKENDS)
        if self.order < 2:
            raise ValueError(f"hyena.order={self.order} must be at least 2")
        if self.filter_embedding_dim < 3 or self.filter_embedding_dim % 2 == 0:
            raise ValueError(f"hyena.filter_embedding_dim={self.filter_embedding_dim} must be odd and at least 3")
        if self.filter_inner_layers < 0:
            raise ValueError(f"hyena.filter_inner_layers={self.filter_inner_layers} must be >= 0")


CONFIGS = {"h3": backbone_config(H3Config, "h3"), "hyena": backbone_config(HyenaConfig, "hyena")}

_PILE_HYENA_FILTER = dict(filter_embedding_dim=33, filter_sine_frequency=14.0, max_length=2048)

LANGUAGE_MODEL_PRESETS: dict[str, dict[str, dict]] = {
    "h3": {"350m": dict(embedding_dim=1024, num_blocks=24)},
    "hyena": {"350m": dict(embedding_dim=1024, num_blocks=24, order=3, **_PILE_HYENA_FILTER)},
}

TIED_EMBEDDINGS: set[str] = set()

# model name -> the paper's name (reports print it)
DISPLAY_NAMES = {"h3": "H3", "hyena": "Hyena"}
