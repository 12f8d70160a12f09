"""The paper's "default PyTorch LSTM": a multi-layer torch.nn.LSTM, no skip connections, no norms."""

import torch
from torch import nn

from models.lstm.config import LSTMConfig

LSTMState = tuple[torch.Tensor, torch.Tensor]  # (h, c), each (layers, B, D)


class VanillaLSTM(nn.Module):
    """(B, S, D) -> (B, S, D): the last layer's hidden states; PyTorch's default initialisation."""

    def __init__(self, config: LSTMConfig):
        super().__init__()
        self.config = config
        D = config.embedding_dim
        self.lstm = nn.LSTM(D, D, num_layers=config.num_blocks, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, S, D) -> (B, S, D)"""
        y, _ = self.lstm(x)  # fused kernel over the whole sequence
        return y

    def init_state(self, batch: int) -> LSTMState:
        like = self.lstm.weight_ih_l0
        zeros = like.new_zeros(self.config.num_blocks, batch, self.config.embedding_dim)  # (layers, B, D)
        return zeros, zeros.clone()

    def step(self, x_t: torch.Tensor, state: LSTMState) -> tuple[torch.Tensor, LSTMState]:
        """x_t (B, D) -> y_t (B, D); the state carries (h, c) of every layer."""
        y, state = self.lstm(x_t.unsqueeze(1), state)  # (B, 1, D)
        return y.squeeze(1), state
