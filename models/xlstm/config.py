"""Configs of the xLSTM layers, blocks, stack and language model; validated on construction."""

import math
from dataclasses import dataclass, field

from models.config_checks import check_choice, check_positive, config_from

FORGET_GATES = ("sigmoid", "exp")
# Kernel backends (kernels.mlstm / kernels.slstm register them; a test keeps these lists equal to the registry's)
MLSTM_BACKENDS = ("auto", "torch", "torch_autograd", "mlstm_kernels", "triton")
SLSTM_BACKENDS = ("auto", "torch", "torch_autograd", "torch_compile", "torch_compile_cuda", "triton")
MLSTM_FORMULATIONS = ("parallel", "chunkwise", "recurrent")
SLSTM_BIAS_INITS = ("powerlaw_blockdependent", "small_init", "standard")
SLSTM_RECURRENT_INITS = ("zeros", "standard")
FEEDFORWARD_ACTIVATIONS = ("gelu", "relu", "relu^2", "swish")
# Gate bias initialisations of Table ablstudies (bottom): the forget gate's equidistant in [3, 6] over the heads or +inf
# (the forget gate fixed at one), the input gate's N(0, 0.1) or 0
FORGET_GATE_BIAS_INITS = ("linspace", "infinity")
INPUT_GATE_BIAS_INITS = ("normal", "zeros")
# The mLSTM block: pre up-projection (paper Figure 10, the xLSTM default) or post up-projection (the mLSTM at the
# embedding dim followed by the feed-forward, as the sLSTM block; Table abl_matrixmemory)
MLSTM_BLOCKS = ("pre_up_projection", "post_up_projection")


def round_up(value: float, multiple: int) -> int:
    """Round up to a multiple, as the official implementation sizes its up-projections."""
    return int(math.ceil(value / multiple) * multiple)


@dataclass
class MLSTMLayerConfig:
    """The mLSTM layer. ``proj_factor``, ``round_proj_up_to`` and ``qkv_proj_blocksize`` size the up-projection and the
    block-diagonal q, k, v of the pre up-projection block (paper Figure 10); the post up-projection block
    (XLSTMStackConfig.mlstm_block) has neither, its mLSTM runs at the embedding dim."""

    num_heads: int = 4
    proj_factor: float = 2.0
    round_proj_up_to: int = 64
    conv1d_kernel_size: int = 4  # 0: no convolution (the ablation of Table abl_matrixmemory)
    qkv_proj_blocksize: int = 4
    bias: bool = False
    forget_gate: str = "sigmoid"
    formulation: str = "chunkwise"  # how forward() runs the cell; step() is always recurrent
    chunk_size: int = 64
    eps: float = 1e-6
    backend: str = "auto"
    # The gating ablation of Table ablstudies (bottom); the defaults are xLSTM's gates. Not input dependent: the
    # gate's pre-activation is its bias alone (no weight); no learnable bias: the bias is a fixed buffer.
    forget_gate_input_dependent: bool = True
    forget_gate_learnable_bias: bool = True
    forget_gate_bias_init: str = "linspace"
    input_gate_input_dependent: bool = True
    input_gate_learnable_bias: bool = True
    input_gate_bias_init: str = "normal"

    def __post_init__(self):
        check_choice("mlstm", "forget_gate", self.forget_gate, FORGET_GATES)
        check_choice("mlstm", "backend", self.backend, MLSTM_BACKENDS)
        check_choice("mlstm", "formulation", self.formulation, MLSTM_FORMULATIONS)
        check_choice("mlstm", "forget_gate_bias_init", self.forget_gate_bias_init, FORGET_GATE_BIAS_INITS)
        check_choice("mlstm", "input_gate_bias_init", self.input_gate_bias_init, INPUT_GATE_BIAS_INITS)
        for gate in ("forget_gate", "input_gate"):
            for option in ("input_dependent", "learnable_bias"):
                check_choice("mlstm", f"{gate}_{option}", getattr(self, f"{gate}_{option}"), (True, False))
        for name in ("num_heads", "proj_factor", "qkv_proj_blocksize", "chunk_size", "round_proj_up_to"):
            check_positive("mlstm", name, getattr(self, name))
        if self.conv1d_kernel_size < 0:
            raise ValueError(f"mlstm.conv1d_kernel_size={self.conv1d_kernel_size} must be >= 0 (0 disables the convolution)")
        if self.forget_gate_bias_init == "infinity":
            fixed = (self.forget_gate, self.forget_gate_input_dependent, self.forget_gate_learnable_bias)
            if fixed != ("sigmoid", False, False):
                raise ValueError(
                    "mlstm.forget_gate_bias_init='infinity' fixes the forget gate at one: it needs forget_gate='sigmoid' "
                    "(exp(inf) is no gate), forget_gate_input_dependent=false and forget_gate_learnable_bias=false (an "
                    f"infinite pre-activation has no gradient to learn from); got forget_gate={self.forget_gate!r}, "
                    f"forget_gate_input_dependent={self.forget_gate_input_dependent}, "
                    f"forget_gate_learnable_bias={self.forget_gate_learnable_bias}"
                )

    def inner_dim(self, embedding_dim: int) -> int:
        inner = round_up(self.proj_factor * embedding_dim, self.round_proj_up_to)
        if inner % self.num_heads or inner % self.qkv_proj_blocksize:
            raise ValueError(
                f"mLSTM inner dim {inner} (embedding_dim {embedding_dim} x proj_factor {self.proj_factor}) must be "
                f"divisible by mlstm.num_heads={self.num_heads} and mlstm.qkv_proj_blocksize={self.qkv_proj_blocksize}"
            )
        return inner


@dataclass
class SLSTMLayerConfig:
    """sLSTM in the post up-projection block (paper Figure 9); the feed-forward part is separate."""

    num_heads: int = 4
    conv1d_kernel_size: int = 4  # 0: no convolution (the formal-language experiments)
    forget_gate: str = "sigmoid"
    bias_init: str = "powerlaw_blockdependent"
    recurrent_weight_init: str = "zeros"
    recurrent_grad_clip: float | None = None  # the paper clips the recurrent gradient to magnitude 10
    backend: str = "auto"

    def __post_init__(self):
        check_choice("slstm", "forget_gate", self.forget_gate, FORGET_GATES)
        check_choice("slstm", "backend", self.backend, SLSTM_BACKENDS)
        check_choice("slstm", "bias_init", self.bias_init, SLSTM_BIAS_INITS)
        check_choice("slstm", "recurrent_weight_init", self.recurrent_weight_init, SLSTM_RECURRENT_INITS)
        check_positive("slstm", "num_heads", self.num_heads)
        if self.conv1d_kernel_size < 0:
            raise ValueError(f"slstm.conv1d_kernel_size={self.conv1d_kernel_size} must be >= 0 (0 disables the convolution)")
        if self.recurrent_grad_clip is not None:
            check_positive("slstm", "recurrent_grad_clip", self.recurrent_grad_clip)


@dataclass
class FeedForwardConfig:
    """The MLP of a post up-projection block: gated, down(act(gate) * up), after the sLSTM (the official factor 1.3
    reproduces the paper's counts); or not gated, down(act(up)), as the ReLU^2 MLP after the mLSTM of Table
    abl_matrixmemory."""

    proj_factor: float = 1.3
    round_proj_up_to: int = 64
    activation: str = "gelu"
    bias: bool = False
    gated: bool = True

    def __post_init__(self):
        check_choice("feedforward", "activation", self.activation, FEEDFORWARD_ACTIVATIONS)
        check_choice("feedforward", "gated", self.gated, (True, False))
        check_positive("feedforward", "proj_factor", self.proj_factor)

    def inner_dim(self, embedding_dim: int) -> int:
        return round_up(self.proj_factor * embedding_dim, self.round_proj_up_to)


@dataclass
class XLSTMStackConfig:
    """A pre-LayerNorm residual stack of mLSTM and sLSTM blocks: xLSTM[a:b] with explicit sLSTM positions."""

    embedding_dim: int = 128
    num_blocks: int = 2
    slstm_at: list[int] = field(default_factory=list)  # 0-based block indices holding sLSTM blocks
    mlstm: MLSTMLayerConfig = field(default_factory=MLSTMLayerConfig)
    slstm: SLSTMLayerConfig = field(default_factory=SLSTMLayerConfig)
    feedforward: FeedForwardConfig = field(default_factory=FeedForwardConfig)  # of every post up-projection block
    add_post_blocks_norm: bool = True
    mlstm_block: str = "pre_up_projection"

    def __post_init__(self):
        # Hydra and YAML hand over plain dicts; accept them so configs compose from files.
        for name, kind in (("mlstm", MLSTMLayerConfig), ("slstm", SLSTMLayerConfig), ("feedforward", FeedForwardConfig)):
            value = getattr(self, name)
            if isinstance(value, dict):
                setattr(self, name, config_from(kind, name, **value))
        check_positive("xlstm", "embedding_dim", self.embedding_dim)
        check_positive("xlstm", "num_blocks", self.num_blocks)
        check_choice("xlstm", "mlstm_block", self.mlstm_block, MLSTM_BLOCKS)
        self.slstm_at = sorted(self.slstm_at)
        invalid = [index for index in self.slstm_at if not 0 <= index < self.num_blocks]
        if invalid or len(set(self.slstm_at)) != len(self.slstm_at):
            raise ValueError(
                f"xlstm.slstm_at={self.slstm_at} must hold distinct block indices in [0, {self.num_blocks - 1}]"
            )
        if self.slstm_at and self.embedding_dim % self.slstm.num_heads:
            raise ValueError(
                f"xlstm.embedding_dim={self.embedding_dim} must be divisible by slstm.num_heads={self.slstm.num_heads}"
            )
        if len(self.slstm_at) < self.num_blocks:
            if self.mlstm_block == "pre_up_projection":
                self.mlstm.inner_dim(self.embedding_dim)  # raises if heads do not divide the inner dim
            elif self.embedding_dim % self.mlstm.num_heads:
                raise ValueError(f"xlstm.embedding_dim={self.embedding_dim} must be divisible by "
                                 f"mlstm.num_heads={self.mlstm.num_heads} (the post up-projection mLSTM's heads)")

    def mlstm_cell_dim(self) -> int:
        """Features of the mLSTM cell: the up-projected inner dim in the pre up-projection block, the embedding dim in
        the post up-projection block."""
        if self.mlstm_block == "post_up_projection":
            return self.embedding_dim
        return self.mlstm.inner_dim(self.embedding_dim)

    @property
    def block_types(self) -> list[str]:
        return ["slstm" if index in self.slstm_at else "mlstm" for index in range(self.num_blocks)]


@dataclass
class XLSTMLanguageModelConfig:
    """Token embedding -> xLSTM stack -> LM head (untied by default); no positional encoding."""

    stack: XLSTMStackConfig = field(default_factory=XLSTMStackConfig)
    vocab_size: int = 50304
    tie_weights: bool = False

    def __post_init__(self):
        if isinstance(self.stack, dict):
            self.stack = config_from(XLSTMStackConfig, "xlstm", **self.stack)
        check_positive("lm", "vocab_size", self.vocab_size)
