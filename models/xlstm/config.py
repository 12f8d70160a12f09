"""Configs of the xLSTM layers, blocks, stack and language model; validated on construction."""

import math
from dataclasses import dataclass, field
from typing import ClassVar, Literal

from models.config_checks import NOT_NEGATIVE, POSITIVE, ModelConfig, config_from

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
class MLSTMLayerConfig(ModelConfig):
    """The mLSTM layer. ``proj_factor``, ``round_proj_up_to`` and ``qkv_proj_blocksize`` size the up-projection and the
    block-diagonal q, k, v of the pre up-projection block (paper Figure 10); the post up-projection block
    (XLSTMStackConfig.mlstm_block) has neither, its mLSTM runs at the embedding dim."""

    owner: ClassVar[str] = "mlstm"

    num_heads: int = field(default=4, metadata=POSITIVE)
    proj_factor: float = field(default=2.0, metadata=POSITIVE)
    round_proj_up_to: int = field(default=64, metadata=POSITIVE)
    # 0: no convolution (the ablation of Table abl_matrixmemory)
    conv1d_kernel_size: int = field(default=4, metadata=NOT_NEGATIVE)
    qkv_proj_blocksize: int = field(default=4, metadata=POSITIVE)
    bias: bool = False
    forget_gate: Literal[FORGET_GATES] = "sigmoid"
    formulation: Literal[MLSTM_FORMULATIONS] = "chunkwise"  # how forward() runs the cell; step() is always recurrent
    chunk_size: int = field(default=64, metadata=POSITIVE)
    eps: float = 1e-6
    backend: Literal[MLSTM_BACKENDS] = "auto"
    # The gating ablation of Table ablstudies (bottom); the defaults are xLSTM's gates. Not input dependent: the
    # gate's pre-activation is its bias alone (no weight); no learnable bias: the bias is a fixed buffer.
    forget_gate_input_dependent: bool = True
    forget_gate_learnable_bias: bool = True
    forget_gate_bias_init: Literal[FORGET_GATE_BIAS_INITS] = "linspace"
    input_gate_input_dependent: bool = True
    input_gate_learnable_bias: bool = True
    input_gate_bias_init: Literal[INPUT_GATE_BIAS_INITS] = "normal"

    def problems(self) -> list[str]:
        fixed = (self.forget_gate, self.forget_gate_input_dependent, self.forget_gate_learnable_bias)
        if self.forget_gate_bias_init == "infinity" and fixed != ("sigmoid", False, False):
            return [
                "mlstm.forget_gate_bias_init='infinity' fixes the forget gate at one: it needs "
                "forget_gate='sigmoid' (exp(inf) is no gate), forget_gate_input_dependent=false and "
                "forget_gate_learnable_bias=false (an infinite pre-activation has no gradient to learn from); got "
                f"forget_gate={self.forget_gate!r}, forget_gate_input_dependent={self.forget_gate_input_dependent}, "
                f"forget_gate_learnable_bias={self.forget_gate_learnable_bias}"
            ]
        return []

    def inner_dim_problems(self, embedding_dim: int) -> list[str]:
        """A message unless the heads and the q, k, v blocks divide the up-projected inner dim."""
        inner = round_up(self.proj_factor * embedding_dim, self.round_proj_up_to)
        if inner % self.num_heads or inner % self.qkv_proj_blocksize:
            return [
                f"mLSTM inner dim {inner} (embedding_dim {embedding_dim} x proj_factor {self.proj_factor}) must be "
                f"divisible by mlstm.num_heads={self.num_heads} and "
                f"mlstm.qkv_proj_blocksize={self.qkv_proj_blocksize}"
            ]
        return []

    def inner_dim(self, embedding_dim: int) -> int:
        problems = self.inner_dim_problems(embedding_dim)
        if problems:
            raise ValueError(problems[0])
        return round_up(self.proj_factor * embedding_dim, self.round_proj_up_to)


@dataclass
class SLSTMLayerConfig(ModelConfig):
    """sLSTM in the post up-projection block (paper Figure 9); the feed-forward part is separate."""

    owner: ClassVar[str] = "slstm"

    num_heads: int = field(default=4, metadata=POSITIVE)
    # 0: no convolution (the formal-language experiments)
    conv1d_kernel_size: int = field(default=4, metadata=NOT_NEGATIVE)
    forget_gate: Literal[FORGET_GATES] = "sigmoid"
    bias_init: Literal[SLSTM_BIAS_INITS] = "powerlaw_blockdependent"
    recurrent_weight_init: Literal[SLSTM_RECURRENT_INITS] = "zeros"
    # the paper clips the recurrent gradient to magnitude 10
    recurrent_grad_clip: float | None = field(default=None, metadata=POSITIVE)
    backend: Literal[SLSTM_BACKENDS] = "auto"


@dataclass
class FeedForwardConfig(ModelConfig):
    """The MLP of a post up-projection block: gated, down(act(gate) * up), after the sLSTM (the official factor 1.3
    reproduces the paper's counts); or not gated, down(act(up)), as the ReLU^2 MLP after the mLSTM of Table
    abl_matrixmemory."""

    owner: ClassVar[str] = "feedforward"

    proj_factor: float = field(default=1.3, metadata=POSITIVE)
    round_proj_up_to: int = 64
    activation: Literal[FEEDFORWARD_ACTIVATIONS] = "gelu"
    bias: bool = False
    gated: bool = True

    def inner_dim(self, embedding_dim: int) -> int:
        return round_up(self.proj_factor * embedding_dim, self.round_proj_up_to)


@dataclass
class XLSTMStackConfig(ModelConfig):
    """A pre-LayerNorm residual stack of mLSTM and sLSTM blocks: xLSTM[a:b] with explicit sLSTM positions."""

    owner: ClassVar[str] = "xlstm"

    embedding_dim: int = field(default=128, metadata=POSITIVE)
    num_blocks: int = field(default=2, metadata=POSITIVE)
    slstm_at: list[int] = field(default_factory=list)  # 0-based block indices holding sLSTM blocks
    mlstm: MLSTMLayerConfig = field(default_factory=MLSTMLayerConfig)
    slstm: SLSTMLayerConfig = field(default_factory=SLSTMLayerConfig)
    feedforward: FeedForwardConfig = field(default_factory=FeedForwardConfig)  # of every post up-projection block
    add_post_blocks_norm: bool = True
    mlstm_block: Literal[MLSTM_BLOCKS] = "pre_up_projection"

    def resolve(self) -> None:
        # Hydra and YAML hand over plain dicts; accept them so configs compose from files.
        for name, kind in (
            ("mlstm", MLSTMLayerConfig),
            ("slstm", SLSTMLayerConfig),
            ("feedforward", FeedForwardConfig),
        ):
            value = getattr(self, name)
            if isinstance(value, dict):
                setattr(self, name, config_from(kind, name, **value))
        self.slstm_at = sorted(self.slstm_at)

    def problems(self) -> list[str]:
        invalid = [index for index in self.slstm_at if not 0 <= index < self.num_blocks]
        if invalid or len(set(self.slstm_at)) != len(self.slstm_at):
            return [f"xlstm.slstm_at={self.slstm_at} must hold distinct block indices in [0, {self.num_blocks - 1}]"]
        problems = []
        if self.slstm_at and self.embedding_dim % self.slstm.num_heads:
            problems.append(
                f"xlstm.embedding_dim={self.embedding_dim} must be divisible by slstm.num_heads={self.slstm.num_heads}"
            )
        if len(self.slstm_at) < self.num_blocks:
            if self.mlstm_block == "pre_up_projection":
                problems += self.mlstm.inner_dim_problems(self.embedding_dim)
            elif self.embedding_dim % self.mlstm.num_heads:
                problems.append(
                    f"xlstm.embedding_dim={self.embedding_dim} must be divisible by "
                    f"mlstm.num_heads={self.mlstm.num_heads} (the post up-projection mLSTM's heads)"
                )
        return problems

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
class XLSTMLanguageModelConfig(ModelConfig):
    """Token embedding -> xLSTM stack -> LM head (untied by default); no positional encoding."""

    owner: ClassVar[str] = "lm"

    stack: XLSTMStackConfig = field(default_factory=XLSTMStackConfig)
    vocab_size: int = field(default=50304, metadata=POSITIVE)
    tie_weights: bool = False

    def resolve(self) -> None:
        if isinstance(self.stack, dict):
            self.stack = config_from(XLSTMStackConfig, "xlstm", **self.stack)
