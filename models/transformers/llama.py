"""Llama (Touvron et al. 2023): pre-RMSNorm blocks, rotary positions, SwiGLU MLP, no biases, final RMSNorm.

Choices where the xLSTM paper leaves details open:
- FFN hidden size 8/3 D rounded up to a multiple of 64. This reproduces all five Llama counts of Table
  spaj_peaklr exactly (e.g. 2752 at D = 1024, 5504 at D = 2048); Meta's multiple_of = 256 (configurable
  via ``ffn_multiple_of``) would overshoot the 350M, 1.3B and 2.7B counts by 1.2%, 1.3% and 0.6%.
- RMSNorm eps 1e-5 (Meta's reference default), rope theta 10000, head dim 64 unless ``num_heads`` is set.
- Initialisation as HF ``LlamaPreTrainedModel``: every linear weight N(0, 0.02), norm weights 1 (Meta's
  reference code has no training initialisation).
"""

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from models.transformers.attention import CausalSelfAttention
from models.transformers.config import LlamaConfig


class SwiGLU(nn.Module):
    """down(silu(gate(x)) * up(x))."""

    def __init__(self, embedding_dim: int, hidden_dim: int):
        super().__init__()
        self.gate_proj = nn.Linear(embedding_dim, hidden_dim, bias=False)
        self.up_proj = nn.Linear(embedding_dim, hidden_dim, bias=False)
        self.down_proj = nn.Linear(hidden_dim, embedding_dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(..., D) -> (..., D)"""
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))  # hidden (..., F)


class LlamaBlock(nn.Module):
    """x + attention(norm(x)), then x + mlp(norm(x))."""

    def __init__(self, config: LlamaConfig):
        super().__init__()
        D = config.embedding_dim
        self.attention_norm = nn.RMSNorm(D, eps=config.norm_eps)
        self.attention = CausalSelfAttention(D, config.num_heads, bias=False, rope_theta=config.rope_theta)
        self.mlp_norm = nn.RMSNorm(D, eps=config.norm_eps)
        self.mlp = SwiGLU(D, config.ffn_hidden_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, S, D) -> (B, S, D)"""
        x = x + self.attention(self.attention_norm(x))
        return x + self.mlp(self.mlp_norm(x))

    def step(self, x_t: torch.Tensor, cache: Any) -> tuple[torch.Tensor, Any]:
        """x_t (B, D) -> (B, D)"""
        y_t, cache = self.attention.step(self.attention_norm(x_t), cache)
        x_t = x_t + y_t
        return x_t + self.mlp(self.mlp_norm(x_t)), cache


class LlamaStack(nn.Module):
    """The Llama backbone: (B, S, D) -> (B, S, D), blocks then a final RMSNorm; step() with a KV cache per block."""

    def __init__(self, config: LlamaConfig):
        super().__init__()
        self.config = config
        self.blocks = nn.ModuleList(LlamaBlock(config) for _ in range(config.num_blocks))
        self.final_norm = nn.RMSNorm(config.embedding_dim, eps=config.norm_eps)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, std=self.config.init_std)
            elif isinstance(module, nn.RMSNorm):
                nn.init.ones_(module.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return self.final_norm(x)

    def init_state(self, batch: int) -> list:
        return [block.attention.init_state(batch) for block in self.blocks]

    def init_static_state(self, batch: int, capacity: int) -> list:
        """One static key-value cache of ``capacity`` positions per block (models.transformers.attention)."""
        return [block.attention.init_static_state(batch, capacity) for block in self.blocks]

    def step(self, x_t: torch.Tensor, state: list) -> tuple[torch.Tensor, list]:
        """x_t (B, D) -> (B, D); the state holds one KV cache per block."""
        new_state = []
        for block, cache in zip(self.blocks, state):
            x_t, cache = block.step(x_t, cache)
            new_state.append(cache)
        return self.final_norm(x_t), new_state
