"""Training FLOPs per token of a model, computed from its architecture config: what a compute estimate multiplies by
the training tokens (FLOPs = GPU-time x peak x utilisation: the model FLOPs of the MFU convention, not what a given
kernel executes).

The formula, per token, counting 2 FLOPs per multiply-accumulate (Kaplan et al. 2020, Chinchilla, PaLM's MFU):

    forward  = 2 N_matmul                        every matmul with a parameter, once per token
             + 2 d_in E   + 2 E C                the input map (0 for a token lookup) and the output map (LM head:
                                                 C = the vocabulary; tied or not, it is a matmul)
             + sum over blocks of mixing(S)      the sequence mixing that multiplies activations with activations
    training = 3 x forward                       the backward pass of a matmul y = x W is two matmuls of its size,
                                                 dx = dy W^T and dW = x^T dy

N_matmul is measured from the built backbone (built on the meta device: a 1.3B model costs no memory and no time):
every parameter with two or more dimensions outside nn.Embedding, biases left out. That counts nn.Linear, the LSTMs'
input and recurrent matrices, the block-diagonal (head-wise) maps at their block-diagonal size, depthwise
convolutions (k multiply-adds per channel and token, k parameters per channel) and the sLSTM's block-diagonal
recurrent matrix (2 E (E / heads) 4 FLOPs per token: 4 gates, one DH x DH matrix per head). Left out: embedding
lookups (GPT-3's learned positions: no arithmetic), one-dimensional parameters (norm scales, gate vectors:
elementwise), biases of any shape and every elementwise operation (activations, gates, norms, softmax, the
stabilisers). A few two-dimensional parameters are used elementwise or once per sequence rather than as per-token
matmuls, and are counted like matmul weights all the same: at the 350M presets they are 2.5% of H3's N_matmul (its
SSM parameters), 1.5% of Hyena's (its filter network), 0.5% of Mamba's (A_log), under 0.1% of RWKV's and HGRN's.

mixing(S) per block and token, S the training sequence length (forward):

- attention (Llama, GPT-3): 4 S E, QK^T and AV over the full S x S square. No causal halving: the convention of
  PaLM's MFU and Chinchilla, and what torch.utils.flop_counter counts for a causal SDPA;
- mLSTM, E_in = its cell's features (the up-projected inner dimension; E in the post up-projection block), DH = E_in / heads, by the config's ``formulation`` (the paper
  trains with the chunkwise kernels, our default): parallel 4 S E_in (the same square as attention); chunkwise
  with chunks of L = min(chunk_size, S) steps 4 L E_in (within chunks) + 4 DH E_in (K^T V into each chunk's DH x DH
  state, and Q times the carried state) + 4 E_in (the normaliser state n: a chunk's weighted sum of keys, and q n);
  recurrent 4 DH E_in + 2 E_in (the outer-product update, the read-outs q C and q n);
- matrix-memory linear RNNs trained chunkwise (GLA, RetNet, HGRN2, RWKV-5, RWKV-6), total key and value widths K
  and V, per-head value width DV, chunks of the config's chunk_size L: 2 L (K + V) + 4 K DV, the same terms as the
  chunkwise mLSTM (the fla kernels on GPU choose their own chunk size; the difference is under 2% of a block);
- Mamba's selective scan: 9 E_in N (E_in = expand E, N = state_dim; mamba_ssm's flops_selective_scan_ref);
- FFT long convolutions (H3: the shift SSM and the diagonal SSM; Hyena: order - 1 filters), per channel and token:
  (2 x 2.5 F log2 F + 3 F) / S for an rfft and an irfft of size F (the power of two >= S + kernel length - 1, as
  kernels.long_conv pads) and the complex product; the kernels' own FFTs are once per batch and left out;
- elementwise recurrences cost nothing here (LSTM and sLSTM cells beyond their matrices, HGRN, RWKV-4's WKV).

Where a count is an estimate (FFT, the scan), the term is small against 2 N_matmul at the paper's sizes.
tests/models/test_flops.py holds this to a hand count and to torch's FlopCounterMode (equal to the FLOP for Llama, GPT-3,
xLSTM[1:0] and xLSTM[0:1] once the kernels' own extras are named); the chunkwise linear RNNs (GLA, HGRN2, RetNet,
RWKV-5/6) come within 1.5% of it. It cannot see elementwise ops (the selective scan, our depthwise convolutions), FFTs
or CPU's fused LSTM kernel, so it reads lower there.
"""

import json
import math
from dataclasses import dataclass
from functools import cache

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from models.catalog import backbone_config
from models.linear_rnn.config import GLAConfig, HGRN2Config, RetNetConfig, RWKV6Config
from models.mamba.config import MambaConfig
from models.rwkv5.config import RWKV5Config
from models.ssm_conv.config import H3Config, HyenaConfig
from models.transformers.config import GPT3Config, LlamaConfig
from models.xlstm.config import MLSTMLayerConfig, XLSTMStackConfig

BACKWARD_FACTOR = 2  # backward = 2 x forward: a matmul's input gradient and its weight gradient


@dataclass(frozen=True)
class FlopsPerToken:
    """Forward FLOPs per token of a model, by term; ``training`` is forward + backward."""

    matmul_parameters: int  # N_matmul: the backbone's parameters used as matmul weights (see the module docstring)
    parameters: float  # 2 N_matmul
    sequence_mixing: float  # the sum over blocks of mixing(S)
    input_map: float  # 2 d_in E (0 for a token embedding)
    output_map: float  # 2 E C (the LM head or the task's decoder)

    @property
    def forward(self) -> float:
        return self.parameters + self.sequence_mixing + self.input_map + self.output_map

    @property
    def training(self) -> float:
        return (1 + BACKWARD_FACTOR) * self.forward


def flops_per_token(
    name: str,
    embedding_dim: int,
    num_blocks: int,
    options: dict | None = None,
    *,
    sequence_length: int,
    output_size: int,
    input_features: int | None = None,
) -> FlopsPerToken:
    """The forward FLOPs per token of backbone ``name`` (its keyword config: embedding_dim, num_blocks, options)
    between an input map and an output map, at training sequence length ``sequence_length``.

    ``input_features``: None for token inputs (an embedding lookup), else the width of the input vectors (a linear
    encoder); ``output_size``: the vocabulary of an LM head or the task decoder's outputs. A ValueError names a bad
    value (an unknown backbone, a bad config) before anything is built."""
    options = dict(options or {})
    for label, value in (
        ("sequence_length", sequence_length),
        ("output_size", output_size),
        ("input_features", 1 if input_features is None else input_features),
    ):
        if not isinstance(value, int) or value <= 0:
            raise ValueError(f"{label}={value!r} must be a positive integer")
    options_json = json.dumps(options, sort_keys=True)
    config = backbone_config(name, embedding_dim=embedding_dim, num_blocks=num_blocks, **options)
    matmul = matmul_parameters(name, embedding_dim, num_blocks, options_json)
    return FlopsPerToken(
        matmul_parameters=matmul,
        parameters=2.0 * matmul,
        sequence_mixing=sequence_mixing(config, sequence_length),
        input_map=0.0 if input_features is None else 2.0 * input_features * embedding_dim,
        output_map=2.0 * embedding_dim * output_size,
    )


@cache
def matmul_parameters(name: str, embedding_dim: int, num_blocks: int, options_json: str) -> int:
    """N_matmul of the backbone, built on the meta device (no memory, no initialisation arithmetic); cached per
    config (``options_json``: its options as sorted JSON, hashable)."""
    from models.registry import build_backbone

    with torch.device("meta"), SkipMetaFills():
        backbone = build_backbone(name, embedding_dim=embedding_dim, num_blocks=num_blocks, **json.loads(options_json))
    lookups = {id(module.weight) for module in backbone.modules() if isinstance(module, nn.Embedding)}
    return sum(
        parameter.numel()
        for path, parameter in backbone.named_parameters()
        if parameter.dim() >= 2 and id(parameter) not in lookups and path.rsplit(".", 1)[-1] != "bias"
    )


class SkipMetaFills(TorchFunctionMode):
    """Initialisation on the meta device: a meta tensor holds no values, yet torch runs the Python reference of every
    in-place fill on it (about 1 ms each, 0.2 s per 350M model). This mode returns a meta tensor unchanged from
    torch.nn.init's functions and from the value-only in-place ops below (each keeps its tensor's shape)."""

    VALUE_ONLY = frozenset({"normal_", "uniform_", "zero_", "fill_", "copy_", "mul_", "div_", "add_", "sub_", "clamp_"})

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        target = args[0] if args else kwargs.get("tensor")
        fills = (
            getattr(func, "__module__", None) == "torch.nn.init" or getattr(func, "__name__", None) in self.VALUE_ONLY
        )
        if fills and isinstance(target, torch.Tensor) and target.is_meta:
            return target
        return func(*args, **kwargs)


# --- sequence mixing: config type -> forward FLOPs per token of all blocks ---------------------------------------


def attention(S: int, width: int) -> float:
    """QK^T and AV over the full S x S square, ``width`` the sum of the heads' dims."""
    return 4.0 * S * width


def chunkwise_matrix_memory(S: int, chunk_size: int, key_width: int, value_width: int, head_value_dim: int) -> float:
    """Within chunks of L steps, QK^T and the weighted sum of V (attention on L x L); across chunks, K^T V into each
    head's (DK x DV) state and Q times the carried state."""
    L = min(chunk_size, S)
    return 2.0 * L * (key_width + value_width) + 4.0 * key_width * head_value_dim


def mlstm(S: int, config: MLSTMLayerConfig, inner: int) -> float:
    """``inner``: the cell's features (XLSTMStackConfig.mlstm_cell_dim)."""
    head_dim = inner // config.num_heads
    if config.formulation == "parallel":
        return attention(S, inner)
    if config.formulation == "chunkwise":  # + the normaliser n: each chunk's sum of weighted keys, and q n
        return chunkwise_matrix_memory(S, config.chunk_size, inner, inner, head_dim) + 4.0 * inner
    return 4.0 * head_dim * inner + 2.0 * inner  # recurrent: C += v k^T and C q per step, and q n


def fft_convolution(S: int, kernel_length: int, channels: int) -> float:
    """Per token: an rfft and an irfft of size F per channel, and the complex product of F / 2 + 1 bins."""
    fft_size = 1 << (S + min(kernel_length, S) - 2).bit_length()
    return channels * (2 * 2.5 * fft_size * math.log2(fft_size) + 3.0 * fft_size) / S


def _xlstm(config: XLSTMStackConfig, S: int) -> float:
    """The mLSTM blocks' mixing; the sLSTM's recurrent matrix is among the matmul parameters. An sLSTM-only stack
    need not have a valid mLSTM inner dimension, so it is not asked for one."""
    mlstm_blocks = config.block_types.count("mlstm")
    return mlstm_blocks * mlstm(S, config.mlstm, config.mlstm_cell_dim()) if mlstm_blocks else 0.0


def _linear_rnn(config, S: int) -> float:
    key_width, value_width = config.key_dim, config.value_dim
    return config.num_blocks * chunkwise_matrix_memory(
        S, config.chunk_size, key_width, value_width, value_width // config.num_heads
    )


SEQUENCE_MIXING = {
    LlamaConfig: lambda config, S: config.num_blocks * attention(S, config.embedding_dim),
    GPT3Config: lambda config, S: config.num_blocks * attention(S, config.embedding_dim),
    XLSTMStackConfig: _xlstm,
    GLAConfig: _linear_rnn,
    RetNetConfig: _linear_rnn,
    RWKV6Config: _linear_rnn,
    RWKV5Config: lambda config, S: (
        config.num_blocks
        * chunkwise_matrix_memory(S, config.chunk_size, config.embedding_dim, config.embedding_dim, config.head_size)
    ),
    HGRN2Config: lambda config, S: (
        config.num_blocks
        * chunkwise_matrix_memory(S, config.chunk_size, config.embedding_dim, config.embedding_dim, config.expand_ratio)
    ),
    MambaConfig: lambda config, S: config.num_blocks * 9.0 * config.inner_dim * config.state_dim,
    H3Config: lambda config, S: (
        config.num_blocks
        * (
            fft_convolution(S, config.state_dim, config.embedding_dim)  # the shift SSM
            + fft_convolution(S, S, config.embedding_dim * config.head_dim)
        )
    ),  # the diagonal SSM, one kernel per channel
    HyenaConfig: lambda config, S: config.num_blocks * (config.order - 1) * fft_convolution(S, S, config.embedding_dim),
}  # every other backbone (the LSTMs, HGRN, RWKV-4) mixes elementwise: 0


def sequence_mixing(config, S: int) -> float:
    """The forward FLOPs per token of all blocks' sequence mixing (0 for elementwise recurrences)."""
    mixing = SEQUENCE_MIXING.get(type(config))
    return 0.0 if mixing is None else mixing(config, S)
