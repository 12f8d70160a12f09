"""What H3 and Hyena share: GPT-style pre-LayerNorm residual blocks (mixer, then a GeLU MLP), the stack with its
final LayerNorm and GPT-2 initialisation.

As the safari / H3 reference language models (flash-attn ``Block`` with ``prenorm=True``): ``x + mixer(ln(x))``,
then ``x + mlp(ln(x))``; LayerNorm with bias, eps 1e-5; MLP ``fc2(gelu_tanh(fc1(x)))`` with biases, hidden
``mlp_factor * D``; a final LayerNorm after the blocks. Initialisation as their ``_init_weights``: every Linear
N(0, 0.02) with zero bias, the MLP's output projection (and the mixer's where the reference names it
``out_proj``) N(0, 0.02 / sqrt(2 num_blocks)).
"""

import math
from collections.abc import Iterable
from typing import Any

import torch
from torch import nn

from models.block_stack import through_blocks
from models.transformers.block import GeLUMLP


class ResidualBlock(nn.Module):
    """x + mixer(norm(x)), then x + mlp(norm(x)); the mixer brings forward, init_state and step."""

    def __init__(self, mixer: nn.Module, embedding_dim: int, mlp_factor: int, norm_eps: float):
        super().__init__()
        self.mixer_norm = nn.LayerNorm(embedding_dim, eps=norm_eps)
        self.mixer = mixer
        self.mlp_norm = nn.LayerNorm(embedding_dim, eps=norm_eps)
        self.mlp = GeLUMLP(embedding_dim, mlp_factor * embedding_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, S, D) -> (B, S, D)"""
        x = x + self.mixer(self.mixer_norm(x))
        return x + self.mlp(self.mlp_norm(x))

    def step(self, x_t: torch.Tensor, state: Any) -> tuple[torch.Tensor, Any]:
        """x_t (B, D) -> (B, D)"""
        y_t, state = self.mixer.step(self.mixer_norm(x_t), state)
        x_t = x_t + y_t
        return x_t + self.mlp(self.mlp_norm(x_t)), state


class ResidualStack(nn.Module):
    """Blocks, then a final LayerNorm: (B, S, D) -> (B, S, D), with init_state/step over all blocks."""

    def __init__(self, config: Any, blocks: list[ResidualBlock]):
        super().__init__()
        self.config = config
        self.blocks = nn.ModuleList(blocks)
        self.final_norm = nn.LayerNorm(config.embedding_dim, eps=config.norm_eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return self.final_norm(x)

    def init_state(self, batch: int) -> list[Any]:
        return [block.mixer.init_state(batch) for block in self.blocks]

    def step(self, x_t: torch.Tensor, state: list[Any]) -> tuple[torch.Tensor, list[Any]]:
        """x_t (B, D) -> (B, D); the state holds one entry per block."""
        x_t, new_state = through_blocks(self.blocks, "step", x_t, state)
        return self.final_norm(x_t), new_state


def gpt2_init(stack: ResidualStack, init_std: float, rescaled: Iterable[nn.Linear]) -> None:
    """Every Linear N(0, init_std) with zero bias; the ``rescaled`` ones N(0, init_std / sqrt(2 num_blocks))."""
    for module in stack.modules():
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=init_std)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
    for linear in rescaled:
        nn.init.normal_(linear.weight, std=init_std / math.sqrt(2 * len(stack.blocks)))
