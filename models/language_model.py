"""Language model around any backbone: token embedding -> backbone -> LM head (untied unless asked)."""

from typing import Any

import torch
from torch import nn


class LanguageModel(nn.Module):
    """The backbone brings its own final norm (and positions, where the model has learned ones)."""

    def __init__(self, backbone: nn.Module, vocab_size: int, embedding_dim: int, tie_weights: bool = False):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab_size, embedding_dim)
        self.backbone = backbone
        self.lm_head = nn.Linear(embedding_dim, vocab_size, bias=False)
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        if tie_weights:
            self.lm_head.weight = self.token_embedding.weight
        else:
            nn.init.normal_(self.lm_head.weight, std=0.02)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """tokens (B, S) -> logits (B, S, V)"""
        return self.lm_head(self.backbone(self.token_embedding(tokens)))

    def __getattr__(self, name: str):
        """``forward_chunk`` where the backbone has one (a parallel pass over a chunk from a carried state);
        ``init_static_state(batch, capacity)`` where it has one (a key-value cache of a fixed number of positions)."""
        if name == "forward_chunk" and hasattr(self.backbone, "forward_chunk"):
            return self._forward_chunk
        if name == "init_static_state" and hasattr(self.backbone, "init_static_state"):
            return self.backbone.init_static_state
        return super().__getattr__(name)

    def _forward_chunk(self, tokens: torch.Tensor, state: Any) -> tuple[torch.Tensor, Any]:
        """tokens (B, C) from ``state`` -> logits (B, C, V) and the state after the chunk."""
        x, state = self.backbone.forward_chunk(self.token_embedding(tokens), state)
        return self.lm_head(x), state

    def init_state(self, batch: int) -> Any:
        return self.backbone.init_state(batch)

    def step(self, token_t: torch.Tensor, state: Any) -> tuple[torch.Tensor, Any]:
        """token_t (B,) -> logits (B, V)"""
        x_t, state = self.backbone.step(self.token_embedding(token_t), state)
        return self.lm_head(x_t), state
