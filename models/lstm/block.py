"""LSTM (Block): a Transformer block with an LSTM in place of self-attention ("Adding Up-Projection Backbone")."""

import torch
import torch.nn.functional as F
from torch import nn

from models.block_stack import BlockStack
from models.lstm.config import LSTMBlockConfig
from models.lstm.residual import ResidualLSTMBlock
from models.lstm.vanilla import LSTMState
from models.xlstm.init import small_init_, wang_init_


class FeedForward(nn.Module):
    """Non-gated MLP down(gelu(up(x))) as in Vaswani et al., exact GeLU.

    The paper gives no initialisation; this is the post up-projection backbone it corresponds to, so we use the
    xLSTM scheme of that backbone's MLP: small init for the up-projection, Wang init for the down-projection."""

    def __init__(self, config: LSTMBlockConfig):
        super().__init__()
        self.embedding_dim = config.embedding_dim
        self.num_blocks = config.num_blocks
        self.proj_up = nn.Linear(config.embedding_dim, config.ffn_inner_dim, bias=config.ffn_bias)
        self.proj_down = nn.Linear(config.ffn_inner_dim, config.embedding_dim, bias=config.ffn_bias)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        small_init_(self.proj_up.weight, self.embedding_dim)
        wang_init_(self.proj_down.weight, self.embedding_dim, self.num_blocks)
        for linear in (self.proj_up, self.proj_down):
            if linear.bias is not None:
                nn.init.zeros_(linear.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(..., D) -> (..., D)"""
        return self.proj_down(F.gelu(self.proj_up(x)))  # via (..., inner)


class LSTMTransformerBlock(nn.Module):
    """x + LSTM(LN(x)), then x + FFN(LN(x))."""

    def __init__(self, config: LSTMBlockConfig):
        super().__init__()
        self.lstm_block = ResidualLSTMBlock(config.embedding_dim, config.norm_bias, config.norm_eps)
        self.ffn_norm = nn.LayerNorm(config.embedding_dim, eps=config.norm_eps, bias=config.norm_bias)
        self.ffn = FeedForward(config)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, S, D) -> (B, S, D)"""
        x = self.lstm_block(x)
        return x + self.ffn(self.ffn_norm(x))

    def init_state(self, batch: int) -> LSTMState:
        return self.lstm_block.init_state(batch)

    def step(self, x_t: torch.Tensor, state: LSTMState) -> tuple[torch.Tensor, LSTMState]:
        """x_t (B, D) -> (B, D)"""
        x_t, state = self.lstm_block.step(x_t, state)
        return x_t + self.ffn(self.ffn_norm(x_t)), state


class LSTMBlockStack(BlockStack):
    """(B, S, D) -> (B, S, D): ``num_blocks`` LSTM Transformer blocks (as many LSTMs and MLPs), then a LayerNorm."""

    def __init__(self, config: LSTMBlockConfig):
        blocks = (LSTMTransformerBlock(config) for _ in range(config.num_blocks))
        super().__init__(blocks, nn.LayerNorm(config.embedding_dim, eps=config.norm_eps, bias=config.norm_bias))
        self.config = config
