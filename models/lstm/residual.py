"""Pre-LayerNorm residual LSTM blocks x + LSTM(LN(x)) and their stack ("Adding Resnet Backbone")."""

import torch
from torch import nn

from models.block_stack import BlockStack
from models.lstm.config import ResidualLSTMConfig
from models.lstm.vanilla import LSTMState


class ResidualLSTMBlock(nn.Module):
    """x + LSTM(LN(x)) with a single-layer torch.nn.LSTM (PyTorch's default initialisation)."""

    def __init__(self, embedding_dim: int, norm_bias: bool, norm_eps: float):
        super().__init__()
        self.norm = nn.LayerNorm(embedding_dim, eps=norm_eps, bias=norm_bias)
        self.lstm = nn.LSTM(embedding_dim, embedding_dim, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, S, D) -> (B, S, D)"""
        y, _ = self.lstm(self.norm(x))  # (B, S, D)
        return x + y

    def init_state(self, batch: int) -> LSTMState:
        zeros = self.lstm.weight_ih_l0.new_zeros(1, batch, self.lstm.hidden_size)  # (1, B, D)
        return zeros, zeros.clone()

    def step(self, x_t: torch.Tensor, state: LSTMState) -> tuple[torch.Tensor, LSTMState]:
        """x_t (B, D) -> (B, D)"""
        y, state = self.lstm(self.norm(x_t).unsqueeze(1), state)  # (B, 1, D)
        return x_t + y.squeeze(1), state


class ResidualLSTM(BlockStack):
    """(B, S, D) -> (B, S, D): ``num_blocks`` residual LSTM blocks, then a final LayerNorm."""

    def __init__(self, config: ResidualLSTMConfig):
        blocks = (
            ResidualLSTMBlock(config.embedding_dim, config.norm_bias, config.norm_eps) for _ in range(config.num_blocks)
        )
        super().__init__(blocks, nn.LayerNorm(config.embedding_dim, eps=config.norm_eps, bias=config.norm_bias))
        self.config = config
