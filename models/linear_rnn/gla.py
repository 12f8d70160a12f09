"""GLA (Yang et al. 2023, "Gated Linear Attention Transformers"), as flash-linear-attention defines it.

Layer (fla ``GatedLinearAttention``): q, k = D -> expand_k * D, v and the output gate = D -> expand_v * D;
per-key-dim decays from a low-rank projection, log a = logsigmoid(gk) / 16; per-head RMSNorm of the
output times swish(gate); out-projection. Block and model: fla's pre-RMSNorm residual blocks with a
SwiGLU MLP (hidden_ratio 4) and a final RMSNorm. Defaults are fla's; with them, D = 1024 and 24 blocks
give the paper's 412M (Table spaj15b_model_results).
"""

import torch
import torch.nn.functional as F
from torch import nn

from kernels.linear_attention import gla, gla_step
from models.linear_rnn.common import GatedRMSNorm, PreNormBlock, ResidualStack, SwiGLUMLP, init_fla_style
from models.linear_rnn.config import GLAConfig


class GatedLinearAttentionLayer(nn.Module):
    """(B, S, D) -> (B, S, D); the state is the (B, NH, DK, DV) matrix memory."""

    def __init__(self, config: GLAConfig):
        super().__init__()
        self.config = config
        D, DK, DV = config.embedding_dim, config.key_dim, config.value_dim
        self.num_heads = config.num_heads
        self.q_proj = nn.Linear(D, DK, bias=False)
        self.k_proj = nn.Linear(D, DK, bias=False)
        self.v_proj = nn.Linear(D, DV, bias=False)
        self.g_proj = nn.Linear(D, DV, bias=False)
        self.gk_proj = nn.Sequential(
            nn.Linear(D, config.gate_low_rank_dim, bias=False), nn.Linear(config.gate_low_rank_dim, DK)
        )
        self.g_norm = GatedRMSNorm(DV // config.num_heads, config.norm_eps)
        self.o_proj = nn.Linear(DV, D, bias=False)

    def _inputs(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """x (..., D) -> q, k, log decay (..., NH, DK/NH) and v, gate (..., NH, DV/NH)."""
        heads = lambda t: t.unflatten(-1, (self.num_heads, -1))  # noqa: E731
        log_decay = F.logsigmoid(self.gk_proj(x)) / self.config.gate_logit_normalizer
        return tuple(heads(t) for t in (self.q_proj(x), self.k_proj(x), self.v_proj(x), log_decay, self.g_proj(x)))

    def _output(self, o: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
        """o, gate (..., NH, DV/NH) -> (..., D)"""
        return self.o_proj(self.g_norm(o, gate).flatten(-2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v, log_decay, gate = self._inputs(x)  # (B, S, NH, *)
        o = gla(q, k, v, log_decay, chunk_size=self.config.chunk_size, backend=self.config.backend)
        return self._output(o, gate)

    def init_state(self, batch: int) -> torch.Tensor:
        weight = self.q_proj.weight
        DK, DV = self.config.key_dim // self.num_heads, self.config.value_dim // self.num_heads
        return torch.zeros(batch, self.num_heads, DK, DV, dtype=weight.dtype, device=weight.device)

    def step(self, x_t: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        q_t, k_t, v_t, log_decay_t, gate_t = self._inputs(x_t)  # (B, NH, *)
        o_t, state = gla_step(q_t, k_t, v_t, log_decay_t, state, backend=self.config.backend)
        return self._output(o_t, gate_t), state


class GLAStack(ResidualStack):
    """The GLA backbone: pre-norm blocks of GLA layer + SwiGLU MLP, final RMSNorm."""

    def __init__(self, config: GLAConfig):
        D = config.embedding_dim
        blocks = [
            PreNormBlock(GatedLinearAttentionLayer(config), SwiGLUMLP(D, config.hidden_ratio), D, config.norm_eps)
            for _ in range(config.num_blocks)
        ]
        super().__init__(blocks, nn.RMSNorm(D, eps=config.norm_eps))
        self.config = config
        init_fla_style(self)
