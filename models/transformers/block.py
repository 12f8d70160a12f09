"""The Transformer block of GPT-3 and of Llama, one class: x + attention(norm(x)), then x + mlp(norm(x)).

The config's ``architecture`` picks the parts: GPT-3's (GPT-2's) LayerNorm, attention with biases and a GeLU MLP of
``ffn_factor * D`` units with biases (GeLU in GPT-2's tanh approximation, HF "gelu_new"), or Llama's RMSNorm,
attention without biases and with rotary positions, and a SwiGLU MLP of ``ffn_hidden_dim`` units without biases.
"""

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from models.transformers.attention import CausalSelfAttention
from models.transformers.config import GPT3Config, LlamaConfig


class GeLUMLP(nn.Module):
    """down(gelu_tanh(up(x))) with biases."""

    def __init__(self, embedding_dim: int, hidden_dim: int):
        super().__init__()
        self.up_proj = nn.Linear(embedding_dim, hidden_dim)
        self.down_proj = nn.Linear(hidden_dim, embedding_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(..., D) -> (..., D)"""
        return self.down_proj(F.gelu(self.up_proj(x), approximate="tanh"))


class SwiGLU(nn.Module):
    """down(silu(gate(x)) * up(x)), without biases."""

    def __init__(self, embedding_dim: int, hidden_dim: int):
        super().__init__()
        self.gate_proj = nn.Linear(embedding_dim, hidden_dim, bias=False)
        self.up_proj = nn.Linear(embedding_dim, hidden_dim, bias=False)
        self.down_proj = nn.Linear(hidden_dim, embedding_dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(..., D) -> (..., D)"""
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))  # hidden (..., F)


class TransformerBlock(nn.Module):
    """x + attention(norm(x)), then x + mlp(norm(x)), with GPT-3's or Llama's parts (``config.architecture``)."""

    def __init__(self, config: GPT3Config | LlamaConfig):
        super().__init__()
        D = config.embedding_dim
        llama = config.architecture == "llama"
        norm = nn.RMSNorm if llama else nn.LayerNorm
        self.attention_norm = norm(D, eps=config.norm_eps)
        self.attention = CausalSelfAttention(
            D, config.num_heads, bias=not llama, rope_theta=config.rope_theta if llama else None
        )
        self.mlp_norm = norm(D, eps=config.norm_eps)
        self.mlp = SwiGLU(D, config.ffn_hidden_dim) if llama else GeLUMLP(D, config.ffn_factor * D)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, S, D) -> (B, S, D)"""
        x = x + self.attention(self.attention_norm(x))
        return x + self.mlp(self.mlp_norm(x))

    def step(self, x_t: torch.Tensor, cache: Any) -> tuple[torch.Tensor, Any]:
        """x_t (B, D) -> (B, D); the cache holds one more position."""
        y_t, cache = self.attention.step(self.attention_norm(x_t), cache)
        x_t = x_t + y_t
        return x_t + self.mlp(self.mlp_norm(x_t)), cache
