"""RetNet (Sun et al. 2023, "Retentive Network"), as flash-linear-attention defines it.

Layer (fla ``MultiScaleRetention``): q, k = D -> expand_k * D with rotary positions, v and the output
gate = D -> expand_v * D; retention with fixed per-head decays 1 - 2^(-5 - h); per-head RMSNorm of the
output times swish(gate); out-projection. Model: fla's pre-RMSNorm blocks with a SwiGLU MLP
(hidden_ratio 2), final RMSNorm. Defaults are fla's (8 heads, expand_k 1, expand_v 2); with them
D = 1024 and 24 blocks give 417.7M, not the paper's 431M (Table spaj15b_model_results): see the
family's docstring.
"""

import torch
from torch import nn

from kernels.linear_attention import retention, retention_step, retnet_log_decays
from models.linear_rnn.common import (
    GatedRMSNorm,
    PreNormBlock,
    ResidualStack,
    RotaryEmbedding,
    SwiGLUMLP,
    init_fla_style,
)
from models.linear_rnn.config import RetNetConfig


class MultiScaleRetention(nn.Module):
    """(B, S, D) -> (B, S, D); the state is the (B, NH, DK, DV) memory and the next position."""

    def __init__(self, config: RetNetConfig):
        super().__init__()
        self.config = config
        D, DK, DV, NH = config.embedding_dim, config.key_dim, config.value_dim, config.num_heads
        self.q_proj = nn.Linear(D, DK, bias=False)
        self.k_proj = nn.Linear(D, DK, bias=False)
        self.v_proj = nn.Linear(D, DV, bias=False)
        self.g_proj = nn.Linear(D, DV, bias=False)
        self.rotary = RotaryEmbedding(DK // NH, config.rope_base)
        self.g_norm = GatedRMSNorm(DV // NH, config.norm_eps)
        self.o_proj = nn.Linear(DV, D, bias=False)

    def _inputs(self, x: torch.Tensor, positions: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """x (B, S, D), positions (S,) -> q, k (B, S, NH, DK/NH) rotated; v, gate (B, S, NH, DV/NH)."""
        heads = lambda t: t.unflatten(-1, (self.config.num_heads, -1))  # noqa: E731
        q, k = (self.rotary(heads(proj(x)), positions) for proj in (self.q_proj, self.k_proj))
        return q, k, heads(self.v_proj(x)), heads(self.g_proj(x))

    def _log_decays(self, like: torch.Tensor) -> torch.Tensor:
        return retnet_log_decays(self.config.num_heads, dtype=like.dtype, device=like.device)  # (NH,)

    def _output(self, o: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
        return self.o_proj(self.g_norm(o, gate).flatten(-2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v, gate = self._inputs(x, torch.arange(x.shape[1], device=x.device))
        o = retention(q, k, v, self._log_decays(q), chunk_size=self.config.chunk_size, backend=self.config.backend)
        return self._output(o, gate)

    def init_state(self, batch: int) -> dict[str, torch.Tensor]:
        weight, NH = self.q_proj.weight, self.config.num_heads
        DK, DV = self.config.key_dim // NH, self.config.value_dim // NH
        memory = torch.zeros(batch, NH, DK, DV, dtype=weight.dtype, device=weight.device)
        return {"memory": memory, "position": torch.zeros((), dtype=torch.long, device=weight.device)}

    def step(self, x_t: torch.Tensor, state: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        q, k, v, gate = self._inputs(x_t[:, None], state["position"][None])  # (B, 1, NH, *)
        o_t, memory = retention_step(
            q[:, 0], k[:, 0], v[:, 0], self._log_decays(q), state["memory"], backend=self.config.backend
        )
        return self._output(o_t, gate[:, 0]), {"memory": memory, "position": state["position"] + 1}


class RetNetStack(ResidualStack):
    """The RetNet backbone: pre-norm blocks of multi-scale retention + SwiGLU MLP, final RMSNorm."""

    def __init__(self, config: RetNetConfig):
        D = config.embedding_dim
        blocks = [
            PreNormBlock(MultiScaleRetention(config), SwiGLUMLP(D, config.hidden_ratio), D, config.norm_eps)
            for _ in range(config.num_blocks)
        ]
        super().__init__(blocks, nn.RMSNorm(D, eps=config.norm_eps))
        self.config = config
        init_fla_style(self)
