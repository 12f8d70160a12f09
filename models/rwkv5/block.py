"""RWKV-5 "Eagle" (Peng et al. 2024): time mixing with matrix-valued heads, channel mixing, blocks and stack.

As ``RWKV_Tmix_x052`` / ``RWKV_CMix_x052`` / ``Block`` of BlinkDL/RWKV-LM (``RWKV-v5/src/model.py`` at the commit
the xLSTM paper cites, 64b7fe4):
- token shift: every projection sees ``lerp(x_{t-1}, x_t, mu)`` with its own learned mix ``mu``.
- time mixing: r, k, v, g = linear maps (no bias) of the shifted inputs, g through SiLU; heads of 64 channels
  with the WKV recurrence (decay ``exp(-exp(time_decay))`` and bonus ``time_faaaa`` per head channel); the
  output divided by ``head_size_divisor`` (8), group-normed per head, times g, then the output projection.
- channel mixing as RWKV-4: ``sigmoid(W_r x_r) * W_v relu(W_k x_k)^2`` with hidden size 4 D (the ``-f4``
  variant, which reproduces the paper's RWKV-5 parameter counts; the repository's default is 3.5 D).
- block: a LayerNorm on the embeddings before the first block (``ln0``), then ``x + att(ln1(x))`` and
  ``x + ffn(ln2(x))``; a final LayerNorm (``ln_out``).
- initialisation: the repository's layer-dependent token-shift mixes, decay and bonus curves and ``ln_x``
  weights; orthogonal weights (gain 1; key and gate 0.1), zero output, ffn value and ffn receptance weights.
  (Its embedding init U(+-1e-4) and orthogonal head belong to the language model, outside the backbone.)
A one-block stack (which the repository cannot build) uses 0 for the layer ratio that divides by num_blocks - 1.
"""

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from kernels.wkv5 import wkv5, wkv5_step
from models.block_stack import through_blocks
from models.rwkv5.config import RWKV5Config


def _token_shift(x: torch.Tensor) -> torch.Tensor:
    """(B, S, D) -> x_{t-1} at t, zeros at t = 0."""
    return F.pad(x, (0, 0, 1, -1))


def _layer_ratios(block_index: int, num_blocks: int) -> tuple[float, float]:
    """(0 at the first block -> 1 at the last, 1 at the first -> 1/num_blocks at the last)."""
    return block_index / max(num_blocks - 1, 1), 1.0 - block_index / num_blocks


class TimeMix(nn.Module):
    """RWKV-5 time mixing: (B, S, D) -> (B, S, D); ``step`` keeps x_{t-1} and the WKV state."""

    def __init__(self, config: RWKV5Config, block_index: int):
        super().__init__()
        self.config = config
        D, NH, DH = config.embedding_dim, config.num_heads, config.head_size
        ratio_0_to_1, ratio_1_to_almost_0 = _layer_ratios(block_index, config.num_blocks)
        channel = torch.arange(D, dtype=torch.float32)
        fraction = channel / D
        self.time_mix_k = nn.Parameter(fraction**ratio_1_to_almost_0)
        self.time_mix_v = nn.Parameter(fraction**ratio_1_to_almost_0 + 0.3 * ratio_0_to_1)
        self.time_mix_r = nn.Parameter(fraction ** (0.5 * ratio_1_to_almost_0))
        self.time_mix_g = nn.Parameter(fraction ** (0.5 * ratio_1_to_almost_0))
        position = channel / (D - 1) if D > 1 else channel
        decay_speed = -6 + 5 * position ** (0.7 + 1.3 * ratio_0_to_1)
        self.time_decay = nn.Parameter(decay_speed.reshape(NH, DH))
        zigzag = ((channel + 1) % 3 - 1) * 0.1
        self.time_faaaa = nn.Parameter((ratio_0_to_1 * (1 - position) + zigzag).reshape(NH, DH))
        self.receptance, self.key, self.value, self.gate, self.output = (nn.Linear(D, D, bias=False) for _ in range(5))
        self.ln_x = nn.GroupNorm(NH, D, eps=1e-5)
        with torch.no_grad():
            for linear, gain in ((self.receptance, 1.0), (self.key, 0.1), (self.value, 1.0), (self.gate, 0.1)):
                nn.init.orthogonal_(linear.weight, gain=gain)
            nn.init.zeros_(self.output.weight)
            self.ln_x.weight.fill_(((1 + block_index) / config.num_blocks) ** 0.7)

    def _projections(self, x, previous):
        """x, previous (..., D) -> r, k, v (..., NH, DH) and the gate g (..., D)."""
        heads = (self.config.num_heads, self.config.head_size)
        r = self.receptance(torch.lerp(previous, x, self.time_mix_r)).unflatten(-1, heads)
        k = self.key(torch.lerp(previous, x, self.time_mix_k)).unflatten(-1, heads)
        v = self.value(torch.lerp(previous, x, self.time_mix_v)).unflatten(-1, heads)
        g = F.silu(self.gate(torch.lerp(previous, x, self.time_mix_g)))
        return r, k, v, g

    def _output(self, y: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        """y (..., NH, DH), g (..., D) -> (..., D)"""
        flat = y.flatten(-2).reshape(-1, self.config.embedding_dim) / self.config.head_size_divisor  # (N, D)
        normed = self.ln_x(flat).reshape(g.shape)
        return self.output(normed * g)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, S, D) -> (B, S, D)"""
        r, k, v, g = self._projections(x, _token_shift(x))  # r, k, v (B, S, NH, DH)
        r, k, v = (t.transpose(1, 2) for t in (r, k, v))  # (B, NH, S, DH)
        log_decay = -torch.exp(self.time_decay)  # (NH, DH)
        y = wkv5(r, k, v, log_decay, self.time_faaaa, chunk_size=self.config.chunk_size, backend=self.config.backend)
        return self._output(y.transpose(1, 2), g)

    def init_state(self, batch: int) -> dict[str, torch.Tensor]:
        NH, DH = self.config.num_heads, self.config.head_size
        weight = self.key.weight
        return {"shift": weight.new_zeros(batch, self.config.embedding_dim), "wkv": weight.new_zeros(batch, NH, DH, DH)}

    def step(self, x_t: torch.Tensor, state: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """x_t (B, D) -> (B, D)"""
        r, k, v, g = self._projections(x_t, state["shift"])  # r, k, v (B, NH, DH)
        y, wkv = wkv5_step(
            r, k, v, -torch.exp(self.time_decay), self.time_faaaa, state["wkv"], backend=self.config.backend
        )
        return self._output(y, g), {"shift": x_t, "wkv": wkv}


class ChannelMix(nn.Module):
    """RWKV channel mixing: sigmoid(W_r x_r) * W_v relu(W_k x_k)^2 with token shift; ``step`` keeps x_{t-1}."""

    def __init__(self, config: RWKV5Config, block_index: int):
        super().__init__()
        D = config.embedding_dim
        _, ratio_1_to_almost_0 = _layer_ratios(block_index, config.num_blocks)
        fraction = torch.arange(D, dtype=torch.float32) / D
        self.time_mix_k = nn.Parameter(fraction**ratio_1_to_almost_0)
        self.time_mix_r = nn.Parameter(fraction**ratio_1_to_almost_0)
        self.key = nn.Linear(D, config.ffn_dim, bias=False)
        self.receptance = nn.Linear(D, D, bias=False)
        self.value = nn.Linear(config.ffn_dim, D, bias=False)
        with torch.no_grad():
            nn.init.orthogonal_(self.key.weight)
            nn.init.zeros_(self.receptance.weight)
            nn.init.zeros_(self.value.weight)

    def _mix(self, x: torch.Tensor, previous: torch.Tensor) -> torch.Tensor:
        k = torch.relu(self.key(torch.lerp(previous, x, self.time_mix_k))) ** 2
        return torch.sigmoid(self.receptance(torch.lerp(previous, x, self.time_mix_r))) * self.value(k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, S, D) -> (B, S, D)"""
        return self._mix(x, _token_shift(x))

    def step(self, x_t: torch.Tensor, previous: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x_t (B, D), previous x_{t-1} (B, D) -> (B, D), x_t"""
        return self._mix(x_t, previous), x_t


class RWKV5Block(nn.Module):
    """x + att(ln1(x)), then x + ffn(ln2(x))."""

    def __init__(self, config: RWKV5Config, block_index: int):
        super().__init__()
        D = config.embedding_dim
        self.ln1 = nn.LayerNorm(D, eps=config.norm_eps)
        self.att = TimeMix(config, block_index)
        self.ln2 = nn.LayerNorm(D, eps=config.norm_eps)
        self.ffn = ChannelMix(config, block_index)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, S, D) -> (B, S, D)"""
        x = x + self.att(self.ln1(x))
        return x + self.ffn(self.ln2(x))

    def init_state(self, batch: int) -> dict[str, Any]:
        return {"att": self.att.init_state(batch), "ffn": self.ln2.weight.new_zeros(batch, self.ln2.weight.shape[0])}

    def step(self, x_t: torch.Tensor, state: dict[str, Any]) -> tuple[torch.Tensor, dict[str, Any]]:
        """x_t (B, D) -> (B, D)"""
        y_t, att = self.att.step(self.ln1(x_t), state["att"])
        x_t = x_t + y_t
        y_t, ffn = self.ffn.step(self.ln2(x_t), state["ffn"])
        return x_t + y_t, {"att": att, "ffn": ffn}


class RWKV5Stack(nn.Module):
    """The RWKV-5 backbone: (B, S, D) -> (B, S, D): ln0, the blocks, ln_out; ``step`` in constant memory."""

    def __init__(self, config: RWKV5Config):
        super().__init__()
        self.config = config
        self.ln0 = nn.LayerNorm(config.embedding_dim, eps=config.norm_eps)
        self.blocks = nn.ModuleList(RWKV5Block(config, index) for index in range(config.num_blocks))
        self.ln_out = nn.LayerNorm(config.embedding_dim, eps=config.norm_eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.ln0(x)
        for block in self.blocks:
            x = block(x)
        return self.ln_out(x)

    def init_state(self, batch: int) -> list[Any]:
        return [block.init_state(batch) for block in self.blocks]

    def step(self, x_t: torch.Tensor, state: list[Any]) -> tuple[torch.Tensor, list[Any]]:
        """x_t (B, D) -> (B, D); the state holds one entry per block."""
        x_t, new_state = through_blocks(self.blocks, "step", self.ln0(x_t), state)
        return self.ln_out(x_t), new_state
