"""xLSTM language model: token embedding -> stack -> LM head; no positional encoding."""

from typing import Any

import torch
from torch import nn

from models.xlstm.config import XLSTMLanguageModelConfig
from models.xlstm.init import small_init_
from models.xlstm.stack import XLSTMStack


class XLSTMLanguageModel(nn.Module):
    def __init__(self, config: XLSTMLanguageModelConfig):
        super().__init__()
        self.config = config
        D = config.stack.embedding_dim
        self.token_embedding = nn.Embedding(config.vocab_size, D)
        self.stack = XLSTMStack(config.stack)
        self.lm_head = nn.Linear(D, config.vocab_size, bias=False)
        if config.tie_weights:
            self.lm_head.weight = self.token_embedding.weight
        small_init_(self.token_embedding.weight, D)
        if not config.tie_weights:
            small_init_(self.lm_head.weight, D)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """tokens (B, S) -> logits (B, S, V)"""
        return self.lm_head(self.stack(self.token_embedding(tokens)))

    def forward_chunk(self, tokens: torch.Tensor, state: list[Any]) -> tuple[torch.Tensor, list[Any]]:
        """tokens (B, C) from ``state`` -> logits (B, C, V) and the state after the chunk."""
        x, state = self.stack.forward_chunk(self.token_embedding(tokens), state)
        return self.lm_head(x), state

    def init_state(self, batch: int) -> list[Any]:
        return self.stack.init_state(batch)

    def step(self, token_t: torch.Tensor, state: list[Any]) -> tuple[torch.Tensor, list[Any]]:
        """token_t (B,) -> logits (B, V)"""
        x_t, state = self.stack.step(self.token_embedding(token_t), state)
        return self.lm_head(x_t), state
