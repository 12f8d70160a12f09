"""Building blocks shared by the mLSTM and sLSTM layers: norms, head-wise projections, causal conv; each in the form
that runs fastest where it runs (eager on a CPU, or fused by torch.compile)."""

import torch
import torch.nn.functional as F
from torch import nn


class LayerNorm(nn.Module):
    """LayerNorm with a weight and no bias (eps 1e-5), as in the paper's pre-LayerNorm backbone."""

    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (x.shape[-1],), self.weight, None, self.eps)

    def reset_parameters(self) -> None:
        nn.init.ones_(self.weight)


class HeadwiseNorm(nn.Module):
    """GroupNorm with one group per head: a LayerNorm over each head's features, then a weight."""

    def __init__(self, num_heads: int, head_dim: int, eps: float = 1e-5):
        super().__init__()
        self.num_heads = num_heads
        self.weight = nn.Parameter(torch.ones(num_heads * head_dim))
        self.eps = eps

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """(..., NH, DH) -> (..., NH * DH)"""
        leading = h.shape[:-2]
        flat = h.reshape(-1, h.shape[-2] * h.shape[-1])  # (N, NH * DH)
        normed = F.group_norm(flat, self.num_heads, self.weight, None, self.eps)
        return normed.reshape(*leading, -1)

    def reset_parameters(self) -> None:
        nn.init.ones_(self.weight)


# Up to this many features a head-wise map runs in eager mode on a CPU as one dense block-diagonal matmul: it costs
# dim / block_dim times the FLOPs but replaces num_blocks tiny matmuls, which is 3-12x faster for the 256 features of a
# small model on this CPU (qkv blocks of 4: einsum 1.1 s vs dense 0.09 s per fwd+bwd at B=2, S=2048;
# benchmarks/lm_training.py). Wider maps (the paper's 2048 features in blocks of 4: 512x the FLOPs) keep the block-wise
# einsum there.
DENSE_HEADWISE_MAX_DIM = 512
# Blocks up to this size run as a broadcast multiply-and-sum (``broadcast_headwise``) under torch.compile and on a GPU:
# the mLSTM's q, k, v blocks of 4. Bigger blocks (the sLSTM's one block per head) are matmuls worth a GEMM each.
BROADCAST_HEADWISE_MAX_BLOCK = 16


class HeadwiseLinear(nn.Module):
    """Block-diagonal linear map: the features are split into blocks, each mapped by its own matrix."""

    def __init__(self, dim: int, num_blocks: int, bias: bool = False):
        super().__init__()
        if dim % num_blocks != 0:
            raise ValueError(f"feature dim {dim} is not divisible into {num_blocks} blocks")
        self.num_blocks = num_blocks
        block_dim = dim // num_blocks
        self.weight = nn.Parameter(torch.empty(num_blocks, block_dim, block_dim))  # (blocks, out, in)
        self.bias = nn.Parameter(torch.zeros(dim)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(..., dim) -> (..., dim)"""
        return headwise_linear(x, [self])[..., 0, :]


def headwise_linear(x: torch.Tensor, projections: list[HeadwiseLinear]) -> torch.Tensor:
    """x (..., dim) through each of ``projections`` (HeadwiseLinear maps of one shape) in one op -> (..., P, dim).

    One op reads x once for all P maps (the mLSTM's q and k of the same input). Its form depends on where it runs:
    under torch.compile and on a GPU, small blocks are a broadcast multiply-and-sum (``broadcast_headwise``); in eager
    mode on a CPU, a dense block-diagonal matmul up to DENSE_HEADWISE_MAX_DIM features, else a block-wise einsum
    (both measured fastest there); bigger blocks elsewhere as on a CPU.
    """
    weights = [projection.weight for projection in projections]
    weight = weights[0][None] if len(weights) == 1 else torch.stack(weights)  # (P, blocks, out, in)
    P, num_blocks, block_dim, _ = weight.shape
    dim = num_blocks * block_dim
    fusing = torch.compiler.is_compiling() or x.device.type != "cpu"
    if fusing and block_dim <= BROADCAST_HEADWISE_MAX_BLOCK:
        y = broadcast_headwise(x, weight)  # (..., P, dim)
    elif dim <= DENSE_HEADWISE_MAX_DIM:
        y = F.linear(x, block_diagonal(weight)).unflatten(-1, (P, dim))  # (..., P, dim)
    else:
        blocks = x.unflatten(-1, (num_blocks, block_dim))  # (..., blocks, in)
        y = torch.einsum("...bi,pboi->...pbo", blocks, weight).flatten(-2)  # (..., P, dim)
    biases = [projection.bias for projection in projections]
    return y if biases[0] is None else y + torch.stack(biases)  # (..., P, dim)


def broadcast_headwise(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """x (..., blocks * in), weight (P, blocks, out, in) -> (..., P, blocks * out): each block's inputs times its
    matrices, summed over the inputs.

    Elementwise and memory-bound: inductor fuses it (forward and backward) into one kernel with its neighbours that
    reads x once and writes the P outputs, where a matmul per block of 4 is hopeless on a GPU, a dense block-diagonal
    GEMM costs dim / 4 times the FLOPs (125M xLSTM[1:0], q, k, v at 1536 features in 24 blocks: 1.0 GFLOP per token
    forward and backward, more than the 0.75 = 6 x 125M of the whole model), and einsum's bmm over the blocks permutes
    x and its result (layout copies). Eager on a GPU: one multiply (a product block_dim times the output) and one sum,
    no layout copy. The weight in x's dtype, as autocast gives a matmul's.
    """
    P, num_blocks, block_dim, _ = weight.shape
    blocks = x.unflatten(-1, (1, num_blocks, 1, block_dim))  # (..., 1, blocks, 1, in)
    return (blocks * weight.to(x.dtype)).sum(-1).flatten(-2)  # (..., P, blocks * out)


def block_diagonal(weight: torch.Tensor) -> torch.Tensor:
    """The block-diagonal (P * dim out, dim in) matrix of P maps' blocks (P, blocks, out, in), gradients flowing back
    into them.

    One broadcast product with the identity over blocks (one op forward, two back), not zeros filled by index: on a
    busy CPU every op is a parallel region that waits for its threads."""
    P, num_blocks, block_dim, _ = weight.shape
    identity = torch.eye(num_blocks, dtype=weight.dtype, device=weight.device)  # (out block, in block)
    dense = weight[:, :, :, None, :] * identity[:, None, :, None]  # (P, out block, out, in block, in)
    return dense.reshape(P * num_blocks * block_dim, num_blocks * block_dim)


class CausalConv1d(nn.Module):
    """Depthwise causal convolution over time with bias; ``step`` keeps the last K-1 inputs as state."""

    def __init__(self, dim: int, kernel_size: int):
        super().__init__()
        self.kernel_size = kernel_size
        self.weight = nn.Parameter(torch.empty(dim, 1, kernel_size))
        self.bias = nn.Parameter(torch.empty(dim))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # PyTorch's default Conv1d initialisation, as the official implementation uses.
        nn.init.kaiming_uniform_(self.weight, a=5**0.5)
        bound = 1 / self.kernel_size**0.5  # fan_in of a depthwise kernel is kernel_size
        nn.init.uniform_(self.bias, -bound, bound)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, S, D) -> (B, S, D): y_t = bias + sum_k weight[:, k] * x_{t - K + 1 + k}.

        Eager, one depthwise conv1d: its forward and backward are a few ops where K shifted multiply-adds are ~30
        (their backward slices and accumulates per tap): on a busy CPU each op is a parallel region that waits for its
        threads, and the LM training step (benchmarks/lm_training.py, 2 threads, machine shared) ran 0.60x -> 0.93x a
        same-size Llama; with one thread both forms cost the same. Under torch.compile, the K shifted multiply-adds:
        elementwise in the (B, S, D) layout, they fuse with the swish after them into one kernel, where inductor
        leaves a convolution to an external kernel with a layout copy on each side."""
        if torch.compiler.is_compiling():
            return self.shifted_sum(x)
        padded = F.pad(x.transpose(1, 2), (self.kernel_size - 1, 0))  # (B, D, K - 1 + S)
        y = F.conv1d(padded, self.weight, self.bias, groups=self.weight.shape[0])  # (B, D, S)
        return y.transpose(1, 2).contiguous()  # (B, S, D)

    def shifted_sum(self, x: torch.Tensor) -> torch.Tensor:
        """(B, S, D) -> (B, S, D), the convolution as K shifted multiply-adds over the time-padded input."""
        S, taps = x.shape[1], self.weight[:, 0, :]  # taps (D, K)
        padded = F.pad(x, (0, 0, self.kernel_size - 1, 0))  # (B, K - 1 + S, D)
        terms = (padded[:, k : k + S] * taps[:, k] for k in range(self.kernel_size))  # (B, S, D) each
        return sum(terms, self.bias)  # (B, S, D)

    def init_state(self, batch: int, dim: int, *, dtype=None, device=None) -> torch.Tensor:
        return torch.zeros(batch, self.kernel_size - 1, dim, dtype=dtype, device=device)  # (B, K-1, D)

    def forward_chunk(self, x: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x (B, C, D) following the inputs in ``state`` (B, K-1, D) -> y (B, C, D), the chunk's last K-1 inputs."""
        window = torch.cat([state, x], dim=1)  # (B, K-1+C, D)
        y = F.conv1d(window.transpose(1, 2), self.weight, self.bias, groups=self.weight.shape[0])  # (B, D, C)
        return y.transpose(1, 2).contiguous(), window[:, window.shape[1] - state.shape[1] :]

    def step(self, x_t: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x_t (B, D), state (B, K-1, D) -> y_t (B, D), new state."""
        window = torch.cat([state, x_t.unsqueeze(1)], dim=1)  # (B, K, D)
        y_t = torch.einsum("bkd,dk->bd", window, self.weight[:, 0, :]) + self.bias
        return y_t, window[:, 1:]
