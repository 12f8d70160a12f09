"""MLP of the post up-projection block: gated, down(act(gate) * up), or not, down(act(up))."""

import torch
import torch.nn.functional as F
from torch import nn

from models.xlstm.config import FeedForwardConfig
from models.xlstm.init import small_init_, wang_init_

ACTIVATIONS = {
    "gelu": F.gelu,
    "relu": F.relu,
    "relu^2": lambda x: F.relu(x).square(),
    "swish": F.silu,
}


class FeedForward(nn.Module):
    def __init__(self, config: FeedForwardConfig, embedding_dim: int, num_blocks: int):
        super().__init__()
        self.embedding_dim = embedding_dim
        self.num_blocks = num_blocks
        self.gated = config.gated
        self.inner_dim = config.inner_dim(embedding_dim)
        self.activation = ACTIVATIONS[config.activation]
        up_dim = 2 * self.inner_dim if config.gated else self.inner_dim
        self.proj_up = nn.Linear(embedding_dim, up_dim, bias=config.bias)  # gated: [gate, up]
        self.proj_down = nn.Linear(self.inner_dim, embedding_dim, bias=config.bias)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        small_init_(self.proj_up.weight, self.embedding_dim)
        wang_init_(self.proj_down.weight, self.embedding_dim, self.num_blocks)
        for linear in (self.proj_up, self.proj_down):
            if linear.bias is not None:
                nn.init.zeros_(linear.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(..., D) -> (..., D)"""
        if not self.gated:
            return self.proj_down(self.activation(self.proj_up(x)))  # via (..., inner)
        gate, up = self.proj_up(x).chunk(2, dim=-1)  # (..., inner) each
        return self.proj_down(self.activation(gate) * up)
