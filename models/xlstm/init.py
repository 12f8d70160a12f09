"""The official xLSTM initialisation scheme (small init, Wang init, gate biases)."""

import math

import torch


def small_init_(weight: torch.Tensor, dim: int) -> torch.Tensor:
    """Normal with std sqrt(2 / (5 dim)) (Nguyen & Salazar 2019, "Transformers without Tears")."""
    return torch.nn.init.normal_(weight, mean=0.0, std=math.sqrt(2 / (5 * dim)))


def wang_init_(weight: torch.Tensor, dim: int, num_blocks: int) -> torch.Tensor:
    """Normal with std 2 / (num_blocks sqrt(dim)) for projections back into the residual stream."""
    return torch.nn.init.normal_(weight, mean=0.0, std=2 / num_blocks / math.sqrt(dim))


def linspace_(bias: torch.Tensor, start: float, end: float) -> torch.Tensor:
    with torch.no_grad():
        return bias.copy_(torch.linspace(start, end, bias.numel(), device=bias.device))


def powerlaw_forget_bias(head_dim: int, block_index: int, num_blocks: int) -> torch.Tensor:
    """sLSTM forget-gate bias per head: from +5 down to -7, the curve's shape depending on depth."""
    depth = block_index / (num_blocks - 1) if num_blocks > 1 else 0.0
    position = torch.arange(head_dim) / max(head_dim - 1, 1)  # (DH,) in [0, 1]
    return 5.0 - 12.0 * position ** (0.3 + 1.3 * depth)
