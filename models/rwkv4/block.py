"""RWKV-4 time mix, channel mix, residual blocks and backbone, initialised as the reference (RWKV-v4neo) does."""

import math
from typing import NamedTuple

import torch
from torch import nn

from kernels.wkv4 import WKV4State, wkv4, wkv4_step
from kernels.wkv4 import initial_state as empty_wkv_state
from models.block_stack import through_blocks
from models.rwkv4.config import RWKV4Config


def _token_shift(x: torch.Tensor) -> torch.Tensor:
    """(B, S, D): x_{t-1} at t, zeros at t = 0."""
    return torch.cat([torch.zeros_like(x[:, :1]), x[:, :-1]], dim=1)


def _mix(x: torch.Tensor, previous: torch.Tensor, mix: torch.Tensor) -> torch.Tensor:
    """Learned interpolation between the current and the previous token: x * mix + previous * (1 - mix)."""
    return torch.lerp(previous, x, mix)


def _time_weights(embedding_dim: int, exponent: float) -> torch.Tensor:
    """The reference's (i / D) ** exponent over the channels i = 0 .. D - 1."""
    return (torch.arange(embedding_dim, dtype=torch.float32) / embedding_dim) ** exponent


class TimeMixState(NamedTuple):
    previous: torch.Tensor  # (B, D) the time mix's input at the last step
    wkv: WKV4State


class TimeMix(nn.Module):
    """Token shift with learned mixes for k, v, r; WKV with time_decay w and time_first u; sigmoid(r) gate; output."""

    def __init__(self, config: RWKV4Config, block_index: int):
        super().__init__()
        self.config, self.block_index = config, block_index
        D = config.embedding_dim
        self.time_decay = nn.Parameter(torch.empty(D))
        self.time_first = nn.Parameter(torch.empty(D))
        self.time_mix_k = nn.Parameter(torch.empty(D))
        self.time_mix_v = nn.Parameter(torch.empty(D))
        self.time_mix_r = nn.Parameter(torch.empty(D))
        self.key = nn.Linear(D, D, bias=False)
        self.value = nn.Linear(D, D, bias=False)
        self.receptance = nn.Linear(D, D, bias=False)
        self.output = nn.Linear(D, D, bias=False)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Decay speeds -5 + 8 (h / (D-1))^(0.7 + 1.3 l) with l = depth from 0 to 1, time_first log(0.3) plus a
        zigzag, mixes (i / D)^(1 - block / num_blocks); value orthogonal, key, receptance and output zero."""
        D, index, num_blocks = self.config.embedding_dim, self.block_index, self.config.num_blocks
        depth = index / (num_blocks - 1) if num_blocks > 1 else 0.0  # the reference's ratio_0_to_1
        remaining = 1.0 - index / num_blocks  # the reference's ratio_1_to_almost0
        channels = torch.arange(D, dtype=torch.float32)
        with torch.no_grad():
            self.time_decay.copy_(-5 + 8 * (channels / max(D - 1, 1)) ** (0.7 + 1.3 * depth))
            zigzag = ((channels + 1) % 3 - 1) * 0.5
            self.time_first.copy_(math.log(0.3) + zigzag)
            self.time_mix_k.copy_(_time_weights(D, remaining))
            self.time_mix_v.copy_(_time_weights(D, remaining) + 0.3 * depth)
            self.time_mix_r.copy_(_time_weights(D, 0.5 * remaining))
        nn.init.orthogonal_(self.value.weight)
        for linear in (self.key, self.receptance, self.output):
            nn.init.zeros_(linear.weight)

    def _projections(self, x, previous):
        k = self.key(_mix(x, previous, self.time_mix_k))
        v = self.value(_mix(x, previous, self.time_mix_v))
        r = torch.sigmoid(self.receptance(_mix(x, previous, self.time_mix_r)))
        return k, v, r

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, S, D) -> (B, S, D)"""
        k, v, r = self._projections(x, _token_shift(x))  # (B, S, D) each
        options = dict(chunk_size=self.config.chunk_size, backend=self.config.backend)
        wkv = wkv4(self.time_decay, self.time_first, k, v, **options)  # (B, S, D)
        return self.output(r * wkv)

    def init_state(self, batch: int) -> TimeMixState:
        like = self.time_decay
        D = self.config.embedding_dim
        previous = torch.zeros(batch, D, dtype=like.dtype, device=like.device)  # (B, D)
        return TimeMixState(previous, empty_wkv_state(batch, D, dtype=like.dtype, device=like.device))

    def step(self, x_t: torch.Tensor, state: TimeMixState) -> tuple[torch.Tensor, TimeMixState]:
        """x_t (B, D) -> (B, D)"""
        k, v, r = self._projections(x_t, state.previous)  # (B, D) each
        wkv, wkv_state = wkv4_step(self.time_decay, self.time_first, k, v, state.wkv, backend=self.config.backend)
        return self.output(r * wkv), TimeMixState(x_t, wkv_state)


class ChannelMix(nn.Module):
    """Token shift with learned mixes for k, r; sigmoid(r) * value(relu(key(x))^2)."""

    def __init__(self, config: RWKV4Config, block_index: int):
        super().__init__()
        self.config, self.block_index = config, block_index
        D, hidden = config.embedding_dim, config.ffn_inner_dim
        self.time_mix_k = nn.Parameter(torch.empty(D))
        self.time_mix_r = nn.Parameter(torch.empty(D))
        self.key = nn.Linear(D, hidden, bias=False)
        self.receptance = nn.Linear(D, D, bias=False)
        self.value = nn.Linear(hidden, D, bias=False)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Mixes (i / D)^(1 - block / num_blocks); key orthogonal with gain sqrt(hidden / D), value and receptance
        zero."""
        D, hidden = self.config.embedding_dim, self.config.ffn_inner_dim
        remaining = 1.0 - self.block_index / self.config.num_blocks
        with torch.no_grad():
            self.time_mix_k.copy_(_time_weights(D, remaining))
            self.time_mix_r.copy_(_time_weights(D, remaining))
        nn.init.orthogonal_(self.key.weight, gain=max(1.0, (hidden / D) ** 0.5))
        nn.init.zeros_(self.value.weight)
        nn.init.zeros_(self.receptance.weight)

    def _mixed(self, x, previous) -> torch.Tensor:
        hidden = torch.relu(self.key(_mix(x, previous, self.time_mix_k))).square()  # (..., hidden)
        return torch.sigmoid(self.receptance(_mix(x, previous, self.time_mix_r))) * self.value(hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, S, D) -> (B, S, D)"""
        return self._mixed(x, _token_shift(x))

    def step(self, x_t: torch.Tensor, previous: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x_t, previous input (B, D) -> (B, D), the new previous input."""
        return self._mixed(x_t, previous), x_t


class RWKV4BlockState(NamedTuple):
    time_mix: TimeMixState
    channel_mix_previous: torch.Tensor  # (B, D)


class RWKV4Block(nn.Module):
    """x + time_mix(LN(x)), then x + channel_mix(LN(x))."""

    def __init__(self, config: RWKV4Config, block_index: int):
        super().__init__()
        self.time_mix_norm = nn.LayerNorm(config.embedding_dim, eps=config.norm_eps)
        self.time_mix = TimeMix(config, block_index)
        self.channel_mix_norm = nn.LayerNorm(config.embedding_dim, eps=config.norm_eps)
        self.channel_mix = ChannelMix(config, block_index)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, S, D) -> (B, S, D)"""
        x = x + self.time_mix(self.time_mix_norm(x))
        return x + self.channel_mix(self.channel_mix_norm(x))

    def init_state(self, batch: int) -> RWKV4BlockState:
        time_mix_state = self.time_mix.init_state(batch)
        return RWKV4BlockState(time_mix_state, torch.zeros_like(time_mix_state.previous))

    def step(self, x_t: torch.Tensor, state: RWKV4BlockState) -> tuple[torch.Tensor, RWKV4BlockState]:
        """x_t (B, D) -> (B, D)"""
        y_t, time_mix_state = self.time_mix.step(self.time_mix_norm(x_t), state.time_mix)
        x_t = x_t + y_t
        y_t, channel_mix_previous = self.channel_mix.step(self.channel_mix_norm(x_t), state.channel_mix_previous)
        return x_t + y_t, RWKV4BlockState(time_mix_state, channel_mix_previous)


class RWKV4Backbone(nn.Module):
    """The RWKV-4 backbone: (B, S, D) -> (B, S, D); LayerNorm on the input (the reference's ln0), blocks, LayerNorm."""

    def __init__(self, config: RWKV4Config):
        super().__init__()
        self.config = config
        self.input_norm = nn.LayerNorm(config.embedding_dim, eps=config.norm_eps)
        self.blocks = nn.ModuleList(RWKV4Block(config, index) for index in range(config.num_blocks))
        self.final_norm = nn.LayerNorm(config.embedding_dim, eps=config.norm_eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.input_norm(x)
        for block in self.blocks:
            x = block(x)
        return self.final_norm(x)

    def init_state(self, batch: int) -> list[RWKV4BlockState]:
        return [block.init_state(batch) for block in self.blocks]

    def step(self, x_t: torch.Tensor, state: list[RWKV4BlockState]) -> tuple[torch.Tensor, list[RWKV4BlockState]]:
        """x_t (B, D) -> (B, D); the state holds one entry per block."""
        x_t, new_state = through_blocks(self.blocks, "step", self.input_norm(x_t), state)
        return self.final_norm(x_t), new_state
