"""sLSTM layer of the post up-projection block (paper Figure 9); the gated MLP is a separate module."""

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

import kernels.slstm as slstm_kernels
from models.xlstm.components import CausalConv1d, HeadwiseLinear, HeadwiseNorm
from models.xlstm.config import SLSTMLayerConfig
from models.xlstm.init import linspace_, powerlaw_forget_bias, small_init_

GATES = ("i", "f", "z", "o")


class SLSTMLayerState(NamedTuple):
    conv: torch.Tensor | None  # (B, K-1, D) last inputs of the causal convolution
    cell: slstm_kernels.SLSTMState


class SLSTMLayer(nn.Module):
    """Optional causal conv + swish feeding the i and f gates, block-diagonal gate projections, sLSTM, head-wise norm."""

    def __init__(self, config: SLSTMLayerConfig, embedding_dim: int, num_blocks: int, block_index: int):
        super().__init__()
        self.config = config
        self.embedding_dim = embedding_dim
        self.num_blocks = num_blocks
        self.block_index = block_index
        NH = config.num_heads
        self.head_dim = DH = embedding_dim // NH

        self.conv = CausalConv1d(embedding_dim, config.conv1d_kernel_size) if config.conv1d_kernel_size > 0 else None
        self.input_proj = nn.ModuleDict({gate: HeadwiseLinear(embedding_dim, NH) for gate in GATES})
        self.recurrent_kernel = nn.Parameter(torch.empty(4, NH, DH, DH))  # (gate, NH, DH_in, DH_out)
        self.bias = nn.Parameter(torch.empty(4, NH, DH))  # (gate, NH, DH)
        self.norm = HeadwiseNorm(NH, DH)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.conv is not None:
            self.conv.reset_parameters()
        for projection in self.input_proj.values():
            small_init_(projection.weight, self.embedding_dim)
        with torch.no_grad():
            if self.config.recurrent_weight_init == "zeros":
                self.recurrent_kernel.zero_()
            else:  # "standard": PyTorch's LSTM init
                bound = 1 / math.sqrt(self.embedding_dim)
                self.recurrent_kernel.uniform_(-bound, bound)
            self.bias.zero_()
            forget_bias = self.bias[GATES.index("f")]  # (NH, DH)
            if self.config.bias_init == "powerlaw_blockdependent":
                forget_bias.copy_(powerlaw_forget_bias(self.head_dim, self.block_index, self.num_blocks))
            elif self.config.bias_init == "small_init":
                for head in forget_bias:
                    linspace_(head, 3.0, 6.0)
            else:  # "standard"
                bound = 1 / math.sqrt(self.embedding_dim)
                self.bias.uniform_(-bound, bound)
        self.norm.reset_parameters()

    def _gate_inputs(self, x: torch.Tensor, x_conv: torch.Tensor) -> torch.Tensor:
        """x, x_conv (B, S, D) -> W x for gates (i, f, z, o): (B, S, 4, NH, DH); i and f see the conv branch."""
        sources = {"i": x_conv, "f": x_conv, "z": x, "o": x}
        wx = torch.stack([self.input_proj[gate](sources[gate]) for gate in GATES], dim=2)  # (B, S, 4, D)
        return wx.reshape(*x.shape[:2], 4, self.config.num_heads, self.head_dim)

    def _scan(self, wx: torch.Tensor, initial_state=None, return_state=False):
        return slstm_kernels.scan(
            wx,
            self.recurrent_kernel,
            self.bias,
            initial_state=initial_state,
            return_state=return_state,
            forget_gate=self.config.forget_gate,
            recurrent_grad_clip=self.config.recurrent_grad_clip,
            backend=self.config.backend,
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, S, D) -> (B, S, D)"""
        x_conv = F.silu(self.conv(x)) if self.conv is not None else x
        h = self._scan(self._gate_inputs(x, x_conv))  # (B, S, NH, DH)
        return self.norm(h)

    def init_state(self, batch: int) -> SLSTMLayerState:
        like = dict(dtype=self.bias.dtype, device=self.bias.device)
        cell = slstm_kernels.initial_state(batch, self.config.num_heads, self.head_dim, **like)
        conv = self.conv.init_state(batch, self.embedding_dim, **like) if self.conv is not None else None
        return SLSTMLayerState(conv=conv, cell=cell)

    def step(self, x_t: torch.Tensor, state: SLSTMLayerState) -> tuple[torch.Tensor, SLSTMLayerState]:
        """x_t (B, D) -> y_t (B, D), in constant memory."""
        conv_state = state.conv
        if self.conv is not None:
            x_conv, conv_state = self.conv.step(x_t, conv_state)
            x_conv = F.silu(x_conv)
        else:
            x_conv = x_t
        wx = self._gate_inputs(x_t.unsqueeze(1), x_conv.unsqueeze(1))  # (B, 1, 4, NH, DH)
        h, cell_state = self._scan(wx, initial_state=state.cell, return_state=True)  # (B, 1, NH, DH)
        return self.norm(h[:, 0]), SLSTMLayerState(conv=conv_state, cell=cell_state)
