"""Hyena (Poli et al. 2023): implicit long convolutions interleaved with data-controlled gating.

Order N: one projection of x to (N + 1) D channels, a short depthwise causal convolution on it, a split into
gates x_0 ... x_{N-1} and a value v; then for x_i = x_{N-1}, ..., x_1: ``v = h_i * (v x_i) + b_i (v x_i)`` (a
causal long convolution with an implicit filter h_i as long as the sequence, plus a skip weight b_i); finally
``out_proj(v x_0)``. The filters come from a small FFN with sine activations on a positional encoding, times an
exponential decay window.

Facts from the reference (HazyResearch/safari ``src/models/sequence/hyena.py``; the same in zoology):
- defaults: order 2, filter FFN width ``filter_order = 64`` with 2 inner layers, positional encoding
  ``emb_dim = 3`` (time, one cosine and sine band) and sine frequency ``w = 1`` (safari's Pile language model
  uses ``emb_dim = 33``, ``w = 14``), short convolution of size 3 with bias, exponential modulation with
  ``fast_decay_pct = 0.3``, ``slow_decay_pct = 1.5``, ``target = 1e-2``, one head, identity activation.
- the positional encoding spans ``l_max`` positions (``max_length``) and is trained; time runs over [0, 1] across
  them, so the filter values depend on ``max_length``, and sequences longer than it are refused.
- the filter FFN (nn.Linear layers in the reference) is initialised N(0, 0.02) with zero biases by the language
  model's ``_init_weights``; the long-convolution skip ``bias`` is N(0, 1). Filter parameters take no weight
  decay in safari: here they are named so the shared weight-decay rule leaves them undecayed.

Recurrent inference: the implicit filter is as long as the context, so ``step`` keeps every past input of each
long convolution; its state grows with the position (not constant memory, unlike the other recurrent models).
"""

import math
from typing import Any

import torch
from torch import nn

from kernels.long_conv import causal_conv, causal_conv_step
from models.ssm_conv.common import ResidualBlock, ResidualStack, gpt2_init
from models.ssm_conv.config import HyenaConfig
from models.xlstm.components import CausalConv1d

# Exponential modulation of the filters (safari ExponentialModulation defaults).
FAST_DECAY_PCT, SLOW_DECAY_PCT, DECAY_TARGET = 0.3, 1.5, 1e-2


def _positional_encoding(length: int, embedding_dim: int) -> torch.Tensor:
    """(length, embedding_dim): normalised time t in [0, 1], then Re and Im of exp(-i f 2 pi n / length)."""
    bands = (embedding_dim - 1) // 2
    time = torch.linspace(0, 1, length)[:, None]  # (L, 1)
    frequencies = torch.linspace(1e-4, bands - 1, bands)  # (bands,)
    angles = 2 * math.pi * torch.arange(length)[:, None] / length * frequencies  # (L, bands)
    return torch.cat([time, torch.cos(angles), -torch.sin(angles)], dim=-1)


class ImplicitFilter(nn.Module):
    """h(t) = FFN(PositionalEncoding(t)) * exp(-t |delta|): (order - 1) filters of D channels, any length."""

    def __init__(self, config: HyenaConfig):
        super().__init__()
        self.config = config
        D, width = config.embedding_dim, config.filter_width
        channels = D * (config.order - 1)  # laid out (D, order - 1) as the reference's "(v o)"
        self.positional_encoding = nn.Parameter(_positional_encoding(config.max_length, config.filter_embedding_dim))
        self.register_buffer("time", torch.linspace(0, 1, config.max_length)[:, None])  # (l_max, 1)
        self.input_projection = nn.Parameter(torch.empty(width, config.filter_embedding_dim))
        self.input_bias = nn.Parameter(torch.zeros(width))
        self.hidden_projections = nn.Parameter(torch.empty(config.filter_inner_layers, width, width))
        self.hidden_biases = nn.Parameter(torch.zeros(config.filter_inner_layers, width))
        self.output_projection = nn.Parameter(torch.empty(channels, width))
        self.sine_frequency = nn.Parameter(torch.full((width,), float(config.filter_sine_frequency)))
        self.bias = nn.Parameter(torch.empty(channels))  # skip weight of each long convolution
        max_decay, min_decay = math.log(DECAY_TARGET) / FAST_DECAY_PCT, math.log(DECAY_TARGET) / SLOW_DECAY_PCT
        self.register_buffer("decay_rates", torch.linspace(min_decay, max_decay, channels).abs())
        with torch.no_grad():
            for projection in (self.input_projection, self.hidden_projections, self.output_projection):
                nn.init.normal_(projection, std=config.init_std)
            nn.init.normal_(self.bias)

    def forward(self, length: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Filters (order - 1, length, D) and skip weights (order - 1, D)."""
        h = torch.sin(
            self.sine_frequency * (self.positional_encoding[:length] @ self.input_projection.T + self.input_bias)
        )  # (L, width)
        for weight, bias in zip(self.hidden_projections, self.hidden_biases):
            h = torch.sin(self.sine_frequency * (h @ weight.T + bias))  # (L, width)
        h = h @ self.output_projection.T  # (L, D * (order - 1))
        if self.config.modulate:
            h = h * torch.exp(-self.time[:length] * self.decay_rates)
        filters = h.unflatten(-1, (self.config.embedding_dim, -1)).permute(2, 0, 1)  # (order - 1, L, D)
        return filters, self.bias.unflatten(0, (self.config.embedding_dim, -1)).T


class HyenaOperator(nn.Module):
    """Hyena mixer: (B, S, D) -> (B, S, D) for S <= max_length; ``step`` caches all past long-conv inputs."""

    def __init__(self, config: HyenaConfig):
        super().__init__()
        self.config = config
        D, width = config.embedding_dim, (config.order + 1) * config.embedding_dim
        self.in_proj = nn.Linear(D, width)
        self.short_conv = CausalConv1d(width, config.short_conv_size)
        self.filter = ImplicitFilter(config)
        self.out_proj = nn.Linear(D, D)

    def _check_length(self, length: int) -> None:
        if length > self.config.max_length:
            raise ValueError(f"sequence length {length} exceeds hyena.max_length={self.config.max_length}")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, S, D) -> (B, S, D)"""
        self._check_length(x.shape[1])
        *gates, v = self.short_conv(self.in_proj(x)).chunk(self.config.order + 1, dim=-1)  # each (B, S, D)
        filters, skips = self.filter(x.shape[1])
        for filter_, skip, gate in zip(filters, skips, reversed(gates[1:])):
            v = v * gate
            v = causal_conv(v, filter_, method=self.config.conv_method, backend=self.config.backend) + skip * v
        return self.out_proj(v * gates[0])

    def init_state(self, batch: int) -> dict[str, Any]:
        weight = self.in_proj.weight
        short_conv = self.short_conv.init_state(batch, weight.shape[0], dtype=weight.dtype, device=weight.device)
        no_inputs = weight.new_zeros(batch, 0, self.config.embedding_dim)  # (B, 0, D)
        return {"short_conv": short_conv, "inputs": [no_inputs] * (self.config.order - 1)}

    def step(self, x_t: torch.Tensor, state: dict[str, Any]) -> tuple[torch.Tensor, dict[str, Any]]:
        """x_t (B, D) -> (B, D); ``inputs`` holds each long convolution's inputs so far, (B, position, D)."""
        position = state["inputs"][0].shape[1]
        self._check_length(position + 1)
        projected, short_conv = self.short_conv.step(self.in_proj(x_t), state["short_conv"])
        *gates, v = projected.chunk(self.config.order + 1, dim=-1)  # each (B, D)
        filters, skips = self.filter(position + 1)
        inputs = []
        for filter_, skip, gate, past in zip(filters, skips, reversed(gates[1:]), state["inputs"]):
            v = v * gate
            inputs.append(torch.cat([past, v[:, None]], dim=1))  # (B, position + 1, D)
            v = causal_conv_step(inputs[-1], filter_, backend=self.config.backend) + skip * v
        return self.out_proj(v * gates[0]), {"short_conv": short_conv, "inputs": inputs}


class HyenaStack(ResidualStack):
    """The Hyena backbone: (B, S, D) -> (B, S, D) for S <= max_length; blocks of Hyena operator + GeLU MLP, a final
    LayerNorm, GPT-2 init."""

    def __init__(self, config: HyenaConfig):
        blocks = [
            ResidualBlock(HyenaOperator(config), config.embedding_dim, config.mlp_factor, config.norm_eps)
            for _ in range(config.num_blocks)
        ]
        super().__init__(config, blocks)
        rescaled = [linear for block in self.blocks for linear in (block.mixer.out_proj, block.mlp.down_proj)]
        gpt2_init(self, config.init_std, rescaled=rescaled)
