"""mLSTM layer in the pre up-projection block (paper Figure 10)."""

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

import kernels.mlstm as mlstm_kernels
from models.xlstm.components import CausalConv1d, HeadwiseLinear, HeadwiseNorm
from models.xlstm.config import MLSTMLayerConfig
from models.xlstm.init import linspace_, small_init_, wang_init_


class MLSTMLayerState(NamedTuple):
    conv: torch.Tensor | None  # (B, K-1, inner) last inputs of the causal convolution
    cell: mlstm_kernels.MLSTMState


class MLSTMLayer(nn.Module):
    """Up-project by 2, mLSTM on a causal-conv branch, head-wise norm, learnable skip, output gate, down-project."""

    def __init__(self, config: MLSTMLayerConfig, embedding_dim: int, num_blocks: int):
        super().__init__()
        self.config = config
        self.embedding_dim = embedding_dim
        self.num_blocks = num_blocks
        self.inner_dim = config.inner_dim(embedding_dim)
        self.head_dim = self.inner_dim // config.num_heads
        inner, num_qkv_blocks = self.inner_dim, self.inner_dim // config.qkv_proj_blocksize

        self.proj_up = nn.Linear(embedding_dim, 2 * inner, bias=config.bias)
        self.conv = CausalConv1d(inner, config.conv1d_kernel_size) if config.conv1d_kernel_size > 0 else None
        self.q_proj = HeadwiseLinear(inner, num_qkv_blocks, bias=config.bias)
        self.k_proj = HeadwiseLinear(inner, num_qkv_blocks, bias=config.bias)
        self.v_proj = HeadwiseLinear(inner, num_qkv_blocks, bias=config.bias)
        self.input_gate = nn.Linear(3 * inner, config.num_heads)
        self.forget_gate = nn.Linear(3 * inner, config.num_heads)
        self.norm = HeadwiseNorm(config.num_heads, self.head_dim)
        self.learnable_skip = nn.Parameter(torch.ones(inner))
        self.proj_down = nn.Linear(inner, embedding_dim, bias=config.bias)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        small_init_(self.proj_up.weight, self.embedding_dim)
        for projection in (self.q_proj, self.k_proj, self.v_proj):
            small_init_(projection.weight, self.embedding_dim)
        wang_init_(self.proj_down.weight, self.embedding_dim, self.num_blocks)
        for linear in (self.proj_up, self.q_proj, self.k_proj, self.v_proj, self.proj_down):
            if linear.bias is not None:
                nn.init.zeros_(linear.bias)
        if self.conv is not None:
            self.conv.reset_parameters()
        nn.init.zeros_(self.forget_gate.weight)
        linspace_(self.forget_gate.bias, 3.0, 6.0)
        nn.init.zeros_(self.input_gate.weight)
        nn.init.normal_(self.input_gate.bias, mean=0.0, std=0.1)
        self.norm.reset_parameters()
        nn.init.ones_(self.learnable_skip)

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        """(B, S, inner) -> (B, NH, S, DH)"""
        return x.reshape(*x.shape[:2], self.config.num_heads, self.head_dim).transpose(1, 2)

    def _qkv_gates(self, x_mlstm: torch.Tensor, x_conv: torch.Tensor):
        q, k, v = self.q_proj(x_conv), self.k_proj(x_conv), self.v_proj(x_mlstm)  # (B, S, inner) each
        gate_input = torch.cat([q, k, v], dim=-1)  # (B, S, 3 inner)
        # both gates in one matmul: half the backward passes over the (B, S, 3 inner) gate input
        weight = torch.cat([self.input_gate.weight, self.forget_gate.weight])  # (2 NH, 3 inner)
        bias = torch.cat([self.input_gate.bias, self.forget_gate.bias])  # (2 NH,)
        i, f = F.linear(gate_input, weight, bias).transpose(1, 2).chunk(2, dim=1)  # (B, NH, S) each
        return self._heads(q), self._heads(k), self._heads(v), i, f

    def _output(self, h: torch.Tensor, x_conv: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        """h (B, NH, S, DH), x_conv and z (B, S, inner) -> (B, S, D)"""
        h_normed = self.norm(h.transpose(1, 2))  # (B, S, inner)
        return self.proj_down((h_normed + self.learnable_skip * x_conv) * F.silu(z))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, S, D) -> (B, S, D)"""
        x_mlstm, z = self.proj_up(x).chunk(2, dim=-1)  # (B, S, inner) each
        x_conv = F.silu(self.conv(x_mlstm)) if self.conv is not None else x_mlstm
        q, k, v, i, f = self._qkv_gates(x_mlstm, x_conv)
        cell = getattr(mlstm_kernels, self.config.formulation)
        options = {"chunk_size": self.config.chunk_size} if self.config.formulation == "chunkwise" else {}
        h = cell(q, k, v, i, f, forget_gate=self.config.forget_gate, eps=self.config.eps,
                 backend=self.config.backend, **options)  # (B, NH, S, DH)
        return self._output(h, x_conv, z)

    def _conv_branch(self, method: str, x_mlstm: torch.Tensor, conv_state: torch.Tensor | None):
        """silu(causal conv(x_mlstm)) from the convolution's state by its ``method`` (step or forward_chunk), and
        its next state; x_mlstm itself without a convolution."""
        if self.conv is None:
            return x_mlstm, conv_state
        x_conv, conv_state = getattr(self.conv, method)(x_mlstm, conv_state)
        return F.silu(x_conv), conv_state

    def forward_chunk(self, x: torch.Tensor, state: MLSTMLayerState) -> tuple[torch.Tensor, MLSTMLayerState]:
        """x (B, C, D) from ``state`` -> (B, C, D) and the state after the chunk: the chunkwise cell started from
        the state's (C, n, m), the convolution from its last inputs (one parallel pass, memory linear in C)."""
        x_mlstm, z = self.proj_up(x).chunk(2, dim=-1)  # (B, C, inner) each
        x_conv, conv_state = self._conv_branch("forward_chunk", x_mlstm, state.conv)  # (B, C, inner)
        q, k, v, i, f = self._qkv_gates(x_mlstm, x_conv)
        h, cell_state = mlstm_kernels.chunkwise(q, k, v, i, f, initial_state=state.cell, return_state=True,
                                                forget_gate=self.config.forget_gate, eps=self.config.eps,
                                                chunk_size=self.config.chunk_size,
                                                backend=self.config.backend)  # (B, NH, C, DH)
        return self._output(h, x_conv, z), MLSTMLayerState(conv=conv_state, cell=cell_state)

    def init_state(self, batch: int) -> MLSTMLayerState:
        """The official zero state: C = n = 0 and stabilizer m = 0."""
        like = dict(dtype=self.proj_up.weight.dtype, device=self.proj_up.weight.device)
        NH, DH = self.config.num_heads, self.head_dim
        cell = mlstm_kernels.MLSTMState(
            C=torch.zeros(batch, NH, DH, DH, **like), n=torch.zeros(batch, NH, DH, **like), m=torch.zeros(batch, NH, **like)
        )
        conv = self.conv.init_state(batch, self.inner_dim, **like) if self.conv is not None else None
        return MLSTMLayerState(conv=conv, cell=cell)

    def step(self, x_t: torch.Tensor, state: MLSTMLayerState) -> tuple[torch.Tensor, MLSTMLayerState]:
        """x_t (B, D) -> y_t (B, D), in constant memory."""
        x_mlstm, z = self.proj_up(x_t).chunk(2, dim=-1)  # (B, inner) each
        x_conv, conv_state = self._conv_branch("step", x_mlstm, state.conv)  # (B, inner)
        x_mlstm, x_conv, z = x_mlstm.unsqueeze(1), x_conv.unsqueeze(1), z.unsqueeze(1)  # (B, 1, inner)
        q, k, v, i, f = self._qkv_gates(x_mlstm, x_conv)
        h, cell_state = mlstm_kernels.step(q, k, v, i, f, state=state.cell, forget_gate=self.config.forget_gate,
                                           eps=self.config.eps, backend=self.config.backend)  # (B, NH, 1, DH)
        return self._output(h, x_conv, z).squeeze(1), MLSTMLayerState(conv=conv_state, cell=cell_state)
