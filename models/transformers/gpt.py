"""GPT-3 (Brown et al. 2020) as GPT-2: learned absolute positions, pre-LayerNorm blocks with biases, GeLU MLP
(4D), final LayerNorm; the language model ties its head to the token embedding.

Choices where the xLSTM paper leaves details open:
- GeLU in GPT-2's tanh approximation (HF "gelu_new"), as in the GPT-2 reference code GPT-3 builds on.
- Dense causal attention in every block (GPT-3's alternating locally banded sparse layers are not used).
- Initialisation as GPT-2 (HF ``GPT2PreTrainedModel``): weights and positions N(0, 0.02), the two residual
  output projections of each block N(0, 0.02 / sqrt(2 num_blocks)), biases 0, LayerNorms (1, 0).
- LayerNorm eps 1e-5, head dim 64 unless ``num_heads`` is set, context length 2048 (the paper's).
"""

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from models.transformers.attention import CausalSelfAttention
from models.transformers.config import GPT3Config


class GeLUMLP(nn.Module):
    """down(gelu_tanh(up(x))) with biases."""

    def __init__(self, embedding_dim: int, hidden_dim: int):
        super().__init__()
        self.up_proj = nn.Linear(embedding_dim, hidden_dim)
        self.down_proj = nn.Linear(hidden_dim, embedding_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(..., D) -> (..., D)"""
        return self.down_proj(F.gelu(self.up_proj(x), approximate="tanh"))


class GPT3Block(nn.Module):
    """x + attention(norm(x)), then x + mlp(norm(x))."""

    def __init__(self, config: GPT3Config):
        super().__init__()
        D = config.embedding_dim
        self.attention_norm = nn.LayerNorm(D, eps=config.norm_eps)
        self.attention = CausalSelfAttention(D, config.num_heads, bias=True)
        self.mlp_norm = nn.LayerNorm(D, eps=config.norm_eps)
        self.mlp = GeLUMLP(D, config.ffn_factor * D)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, S, D) -> (B, S, D)"""
        x = x + self.attention(self.attention_norm(x))
        return x + self.mlp(self.mlp_norm(x))

    def step(self, x_t: torch.Tensor, cache: Any) -> tuple[torch.Tensor, Any]:
        """x_t (B, D) -> (B, D)"""
        y_t, cache = self.attention.step(self.attention_norm(x_t), cache)
        x_t = x_t + y_t
        return x_t + self.mlp(self.mlp_norm(x_t)), cache


class GPT3Stack(nn.Module):
    """The GPT-3 backbone: (B, S, D) -> (B, S, D); adds learned positions, runs the blocks, then a final LayerNorm."""

    def __init__(self, config: GPT3Config):
        super().__init__()
        self.config = config
        self.position_embedding = nn.Embedding(config.max_context_length, config.embedding_dim)
        self.blocks = nn.ModuleList(GPT3Block(config) for _ in range(config.num_blocks))
        self.final_norm = nn.LayerNorm(config.embedding_dim, eps=config.norm_eps)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        std = self.config.init_std
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=std)
            if isinstance(module, nn.Linear):
                nn.init.zeros_(module.bias)
            elif isinstance(module, nn.LayerNorm):
                module.reset_parameters()
        for block in self.blocks:
            for residual_proj in (block.attention.out_proj, block.mlp.down_proj):
                nn.init.normal_(residual_proj.weight, std=std / math.sqrt(2 * self.config.num_blocks))

    def _check_length(self, length: int) -> None:
        if length > self.config.max_context_length:
            raise ValueError(
                f"sequence length {length} exceeds gpt3.max_context_length={self.config.max_context_length}"
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, S, D) -> (B, S, D)"""
        self._check_length(x.shape[1])
        x = x + self.position_embedding.weight[: x.shape[1]]  # (B, S, D)
        for block in self.blocks:
            x = block(x)
        return self.final_norm(x)

    def init_state(self, batch: int) -> list:
        return [block.attention.init_state(batch) for block in self.blocks]

    def init_static_state(self, batch: int, capacity: int) -> list:
        """One static key-value cache of ``capacity`` positions per block (models.transformers.attention)."""
        return [block.attention.init_static_state(batch, capacity) for block in self.blocks]

    def step(self, x_t: torch.Tensor, state: list) -> tuple[torch.Tensor, list]:
        """x_t (B, D) -> (B, D); the state holds one KV cache per block, whose length is the position of x_t."""
        position = state[0].length
        self._check_length(position + 1)
        x_t = x_t + self.position_embedding.weight[position]  # (B, D)
        new_state = []
        for block, cache in zip(self.blocks, state):
            x_t, cache = block.step(x_t, cache)
            new_state.append(cache)
        return self.final_norm(x_t), new_state
