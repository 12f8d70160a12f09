"""Pre-LayerNorm residual LSTM blocks x + LSTM(LN(x)) and their stack ("Adding Resnet Backbone")."""

import torch
from torch import nn

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


class ResidualLSTM(nn.Module):
    """(B, S, D) -> (B, S, D): ``num_blocks`` residual LSTM blocks, then a final LayerNorm."""

    def __init__(self, config: ResidualLSTMConfig):
        super().__init__()
        self.config = config
        self.blocks = nn.ModuleList(
            ResidualLSTMBlock(config.embedding_dim, config.norm_bias, config.norm_eps) for _ in range(config.num_blocks)
        )
        self.post_blocks_norm = nn.LayerNorm(config.embedding_dim, eps=config.norm_eps, bias=config.norm_bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return self.post_blocks_norm(x)

    def init_state(self, batch: int) -> list[LSTMState]:
        return [block.init_state(batch) for block in self.blocks]

    def step(self, x_t: torch.Tensor, state: list[LSTMState]) -> tuple[torch.Tensor, list[LSTMState]]:
        """x_t (B, D) -> (B, D); the state holds (h, c) of each block."""
        new_state = []
        for block, block_state in zip(self.blocks, state):
            x_t, block_state = block.step(x_t, block_state)
            new_state.append(block_state)
        return self.post_blocks_norm(x_t), new_state
