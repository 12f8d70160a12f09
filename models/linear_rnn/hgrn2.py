"""HGRN2 (Qin et al. 2024, "HGRN2: Gated Linear RNNs with State Expansion"), as flash-linear-attention defines it.

Layer (fla ``HGRN2Attention``): heads of expand_ratio key dims (num_heads = D / expand_ratio);
q = swish(q_proj x), forget gate f = logsigmoid(f_proj x) raised by the block's lower bound, the key is
1 - f (outer-product state expansion, see ``kernels.linear_attention.hgrn2``), the value i = i_proj x;
RMSNorm over all heads, out-projection (no output gate). Model: fla's pre-RMSNorm blocks with a SwiGLU
MLP (hidden_ratio 4), learnable lower bounds per block, final RMSNorm. Defaults are fla's
(expand_ratio 128); with them the paper's counts are reproduced (Table spaj_peaklr). Small models
need expand_ratio <= embedding_dim (e.g. 64 at D = 64: one head with a 64 x 64 state).
"""

import torch
import torch.nn.functional as F
from torch import nn

from kernels.linear_attention import hgrn2, hgrn2_step
from models.linear_rnn.common import (
    LowerBoundedStack,
    PreNormBlock,
    SwiGLUMLP,
    init_fla_style,
    lower_bounded_log_forget,
)
from models.linear_rnn.config import HGRN2Config

OUTPUT_NORM_EPS = 1e-5  # fla applies this norm through rms_norm_linear, whose default eps ignores norm_eps


class HGRN2Layer(nn.Module):
    """(B, S, D) -> (B, S, D); the state is (B, NH, expand_ratio, D / NH)."""

    def __init__(self, config: HGRN2Config):
        super().__init__()
        self.config = config
        D = config.embedding_dim
        self.q_proj = nn.Linear(D, D, bias=False)
        self.f_proj = nn.Linear(D, D, bias=False)
        self.i_proj = nn.Linear(D, D, bias=False)
        self.g_norm = nn.RMSNorm(D, eps=OUTPUT_NORM_EPS)
        self.o_proj = nn.Linear(D, D, bias=False)

    def _inputs(self, x: torch.Tensor, lower_bound: torch.Tensor | None) -> tuple[torch.Tensor, ...]:
        """x (..., D) -> q, log forget gate, input i, each (..., NH, D / NH)."""
        heads = lambda t: t.unflatten(-1, (self.config.num_heads, -1))  # noqa: E731
        log_forget = lower_bounded_log_forget(F.logsigmoid(self.f_proj(x)), lower_bound)
        return heads(F.silu(self.q_proj(x))), heads(log_forget), heads(self.i_proj(x))

    def forward(self, x: torch.Tensor, lower_bound: torch.Tensor | None = None) -> torch.Tensor:
        q, log_forget, i = self._inputs(x, lower_bound)  # (B, S, NH, *)
        o = hgrn2(q, log_forget, i, chunk_size=self.config.chunk_size, backend=self.config.backend)
        return self.o_proj(self.g_norm(o.flatten(-2)))

    def init_state(self, batch: int) -> torch.Tensor:
        weight, NH = self.q_proj.weight, self.config.num_heads
        head_dim = self.config.embedding_dim // NH
        return torch.zeros(batch, NH, self.config.expand_ratio, head_dim, dtype=weight.dtype, device=weight.device)

    def step(self, x_t: torch.Tensor, state: torch.Tensor, lower_bound: torch.Tensor | None = None):
        q_t, log_forget_t, i_t = self._inputs(x_t, lower_bound)  # (B, NH, *)
        o_t, state = hgrn2_step(q_t, log_forget_t, i_t, state, backend=self.config.backend)
        return self.o_proj(self.g_norm(o_t.flatten(-2))), state


class HGRN2Stack(LowerBoundedStack):
    """The HGRN2 backbone: pre-norm blocks of HGRN2 layer + SwiGLU MLP, lower bounds per block, final RMSNorm."""

    def __init__(self, config: HGRN2Config):
        D = config.embedding_dim
        blocks = [
            PreNormBlock(HGRN2Layer(config), SwiGLUMLP(D, config.hidden_ratio), D, config.norm_eps)
            for _ in range(config.num_blocks)
        ]
        super().__init__(blocks, nn.RMSNorm(D, eps=config.norm_eps), D, config.use_lower_bound)
        self.config = config
        init_fla_style(self)
