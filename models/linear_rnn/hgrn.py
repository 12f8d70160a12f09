"""HGRN (Qin et al. 2023, "Hierarchically Gated Recurrent Neural Network"), as flash-linear-attention defines it.

Layer (fla ``HGRNAttention``): forget gate f = logsigmoid(f_proj x), raised by the block's lower bound;
input i = swish(i_proj x) * (1 - f); elementwise recurrence h_t = f_t h_{t-1} + i_t; RMSNorm of h
times swish(g_proj x); out-projection. Model: fla's pre-RMSNorm blocks with a SwiGLU MLP (hidden_ratio 4),
learnable lower bounds per block, final RMSNorm. Defaults are fla's (expand_ratio 1); with them,
D = 1024 and 24 blocks give the paper's 411M (Table spaj15b_model_results).
"""

import torch
import torch.nn.functional as F
from torch import nn

from kernels.linear_attention import hgrn, hgrn_step
from models.linear_rnn.common import (
    GatedRMSNorm,
    LowerBoundedStack,
    PreNormBlock,
    SwiGLUMLP,
    init_fla_style,
    lower_bounded_log_forget,
)
from models.linear_rnn.config import HGRNConfig


class HGRNLayer(nn.Module):
    """(B, S, D) -> (B, S, D); the state is the (B, inner_dim) hidden vector."""

    def __init__(self, config: HGRNConfig):
        super().__init__()
        self.config = config
        D, DI = config.embedding_dim, config.inner_dim
        self.i_proj = nn.Linear(D, DI, bias=False)
        self.f_proj = nn.Linear(D, DI, bias=False)
        self.g_proj = nn.Linear(D, DI, bias=False)
        self.g_norm = GatedRMSNorm(DI, config.norm_eps)
        self.o_proj = nn.Linear(DI, D, bias=False)

    def _inputs(self, x: torch.Tensor, lower_bound: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """x (..., D) -> input, log forget gate (..., DI)"""
        log_forget = lower_bounded_log_forget(F.logsigmoid(self.f_proj(x)), lower_bound)
        return F.silu(self.i_proj(x)) * -torch.expm1(log_forget), log_forget

    def forward(self, x: torch.Tensor, lower_bound: torch.Tensor | None = None) -> torch.Tensor:
        i, log_forget = self._inputs(x, lower_bound)  # (B, S, DI)
        h = hgrn(i, log_forget, chunk_size=self.config.chunk_size, backend=self.config.backend)
        return self.o_proj(self.g_norm(h, self.g_proj(x)))

    def init_state(self, batch: int) -> torch.Tensor:
        weight = self.i_proj.weight
        return torch.zeros(batch, self.config.inner_dim, dtype=weight.dtype, device=weight.device)

    def step(self, x_t: torch.Tensor, state: torch.Tensor, lower_bound: torch.Tensor | None = None):
        i_t, log_forget_t = self._inputs(x_t, lower_bound)  # (B, DI)
        h_t, state = hgrn_step(i_t, log_forget_t, state, backend=self.config.backend)
        return self.o_proj(self.g_norm(h_t, self.g_proj(x_t))), state


class HGRNStack(LowerBoundedStack):
    """The HGRN backbone: pre-norm blocks of HGRN layer + SwiGLU MLP, lower bounds per block, final RMSNorm."""

    def __init__(self, config: HGRNConfig):
        D = config.embedding_dim
        blocks = [
            PreNormBlock(HGRNLayer(config), SwiGLUMLP(D, config.hidden_ratio), D, config.norm_eps)
            for _ in range(config.num_blocks)
        ]
        super().__init__(blocks, nn.RMSNorm(D, eps=config.norm_eps), config.inner_dim, config.use_lower_bound)
        self.config = config
        init_fla_style(self)
