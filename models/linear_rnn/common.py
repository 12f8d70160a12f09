"""Pieces shared by the linear-RNN baselines: norms, the SwiGLU MLP, token shift, rotary positions, the
pre-norm residual block and stack of flash-linear-attention's models."""

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from models.block_stack import through_blocks


def swiglu_hidden_dim(embedding_dim: int, hidden_ratio: float) -> int:
    """flash-linear-attention's MLP size: 2/3 * ratio * D rounded up to a multiple of 256 (~ratio * D^2 params)."""
    hidden = int(embedding_dim * hidden_ratio * 2 / 3)
    return 256 * -(-hidden // 256)


class GatedRMSNorm(nn.Module):
    """RMSNorm of each head's features, times a weight and swish(gate): fla's ``FusedRMSNormGated``."""

    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
        """x, gate (..., dim) -> (..., dim)"""
        return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps) * F.silu(gate)


class SwiGLUMLP(nn.Module):
    """down(swish(gate(x)) * up(x)): fla's ``GatedMLP``, the channel mixer of GLA, HGRN, HGRN2 and RetNet."""

    def __init__(self, embedding_dim: int, hidden_ratio: float):
        super().__init__()
        hidden = swiglu_hidden_dim(embedding_dim, hidden_ratio)
        self.gate_proj = nn.Linear(embedding_dim, hidden, bias=False)
        self.up_proj = nn.Linear(embedding_dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, embedding_dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(..., D) -> (..., D)"""
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


def token_shift(x: torch.Tensor, previous: torch.Tensor | None = None) -> torch.Tensor:
    """The sequence one step later: (B, S, D) -> (B, S, D), row 0 = ``previous`` (B, D) or zeros."""
    first = torch.zeros_like(x[:, :1]) if previous is None else previous[:, None]
    return torch.cat([first, x[:, :-1]], dim=1)


class RotaryEmbedding(nn.Module):
    """Rotary positions, non-interleaved halves (GPT-NeoX style), base 10000: fla's ``RotaryEmbedding``.

    ``head_dim`` must be even (``RetNetConfig`` checks it)."""

    def __init__(self, head_dim: int, base: float = 10000.0):
        super().__init__()
        self.register_buffer(
            "inv_freq", base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim), persistent=False
        )

    def forward(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """x (B, S, NH, DH), positions (S,) -> rotated x."""
        angles = positions.to(self.inv_freq.dtype)[:, None] * self.inv_freq  # (S, DH/2)
        cos, sin = (f(angles).to(x.dtype).repeat(1, 2)[:, None, :] for f in (torch.cos, torch.sin))  # (S, 1, DH)
        first, second = x.chunk(2, dim=-1)
        return x * cos + torch.cat([-second, first], dim=-1) * sin


class PreNormBlock(nn.Module):
    """x + mixer(norm(x)), then x + mlp(norm(x)), with RMSNorms: the block of fla's GLA/HGRN/HGRN2/RetNet."""

    def __init__(self, mixer: nn.Module, mlp: nn.Module, embedding_dim: int, norm_eps: float):
        super().__init__()
        self.mixer_norm = nn.RMSNorm(embedding_dim, eps=norm_eps)
        self.mixer = mixer
        self.mlp_norm = nn.RMSNorm(embedding_dim, eps=norm_eps)
        self.mlp = mlp

    def forward(self, x: torch.Tensor, **mixer_inputs) -> torch.Tensor:
        """(B, S, D) -> (B, S, D)"""
        x = x + self.mixer(self.mixer_norm(x), **mixer_inputs)
        return x + self.mlp(self.mlp_norm(x))

    def init_state(self, batch: int) -> Any:
        return self.mixer.init_state(batch)

    def step(self, x_t: torch.Tensor, state: Any, **mixer_inputs) -> tuple[torch.Tensor, Any]:
        """x_t (B, D) -> (B, D)"""
        y_t, state = self.mixer.step(self.mixer_norm(x_t), state, **mixer_inputs)
        x_t = x_t + y_t
        return x_t + self.mlp(self.mlp_norm(x_t)), state


class ResidualStack(nn.Module):
    """Blocks, then a final norm: (B, S, D) -> (B, S, D). ``block_inputs`` gives each block extra inputs."""

    def __init__(self, blocks: list[nn.Module], final_norm: nn.Module):
        super().__init__()
        self.blocks = nn.ModuleList(blocks)
        self.final_norm = final_norm

    def block_inputs(self) -> list[dict]:
        return [{} for _ in self.blocks]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block, inputs in zip(self.blocks, self.block_inputs()):
            x = block(x, **inputs)
        return self.final_norm(x)

    def init_state(self, batch: int) -> list[Any]:
        return [block.init_state(batch) for block in self.blocks]

    def step(self, x_t: torch.Tensor, state: list[Any]) -> tuple[torch.Tensor, list[Any]]:
        """x_t (B, D) -> (B, D); the state holds one entry per block."""
        x_t, new_state = through_blocks(self.blocks, "step", x_t, state, self.block_inputs())
        return self.final_norm(x_t), new_state


def init_fla_style(module: nn.Module, std: float = 0.02) -> None:
    """flash-linear-attention's model init: every Linear weight N(0, std), biases 0, norm weights 1."""
    for sub in module.modules():
        if isinstance(sub, nn.Linear):
            nn.init.normal_(sub.weight, std=std)
            if sub.bias is not None:
                nn.init.zeros_(sub.bias)
        elif isinstance(sub, (nn.RMSNorm, nn.LayerNorm, nn.GroupNorm, GatedRMSNorm)):
            nn.init.ones_(sub.weight)
            if getattr(sub, "bias", None) is not None:
                nn.init.zeros_(sub.bias)


def lower_bounded_log_forget(log_forget: torch.Tensor, lower_bound: torch.Tensor | None) -> torch.Tensor:
    """HGRN's forget gate lower bound: f = lb + (1 - lb) * f, in log space."""
    if lower_bound is None:
        return log_forget
    return torch.logaddexp(lower_bound.log(), torch.log1p(-lower_bound) + log_forget)


class LowerBoundedStack(ResidualStack):
    """A stack whose blocks' forget gates have lower bounds rising with depth (HGRN, HGRN2).

    One learnable row per block (init 0): lower bounds = cumsum(softmax over blocks) - first softmax
    entry, so block 0 has none and they rise to below 1 at the top (fla's ``lower_bounds``).
    """

    def __init__(self, blocks: list[nn.Module], final_norm: nn.Module, gate_dim: int, use_lower_bound: bool):
        super().__init__(blocks, final_norm)
        self.lower_bounds = nn.Parameter(torch.zeros(len(blocks), gate_dim)) if use_lower_bound else None

    def block_inputs(self) -> list[dict]:
        if self.lower_bounds is None:
            return [{"lower_bound": None} for _ in self.blocks]
        weights = self.lower_bounds.softmax(0)  # (num_blocks, gate_dim)
        bounds = weights.cumsum(0) - weights[0]
        # block 0's bound is 0: skipped, as log(0) would give NaN gradients
        return [{"lower_bound": None if index == 0 else bounds[index]} for index in range(len(self.blocks))]
