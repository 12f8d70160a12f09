"""mLSTM layers: of the pre up-projection block (paper Figure 10) and, sharing the cell's forward and step, the base
of the post up-projection one (models.xlstm.mlstm_post_layer)."""

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

import kernels.mlstm as mlstm_kernels
from models.xlstm.components import CausalConv1d, HeadwiseLinear, HeadwiseNorm, headwise_linear
from models.xlstm.config import MLSTMLayerConfig
from models.xlstm.gates import HeadGate, gate_preactivations
from models.xlstm.init import small_init_, wang_init_


class MLSTMLayerState(NamedTuple):
    conv: torch.Tensor | None  # (B, K-1, inner) last inputs of the causal convolution
    cell: mlstm_kernels.MLSTMState


def mlstm_gates(config: MLSTMLayerConfig, in_features: int) -> tuple[HeadGate, HeadGate]:
    """The input and forget gate of an mLSTM layer whose gates see ``in_features`` features."""
    return (
        HeadGate(
            in_features,
            config.num_heads,
            config.input_gate_input_dependent,
            config.input_gate_learnable_bias,
            config.input_gate_bias_init,
        ),
        HeadGate(
            in_features,
            config.num_heads,
            config.forget_gate_input_dependent,
            config.forget_gate_learnable_bias,
            config.forget_gate_bias_init,
        ),
    )


class MLSTMCellLayer(nn.Module):
    """forward and step of an mLSTM layer around its cell of ``inner_dim`` features in ``config.num_heads`` heads.

    A subclass sets ``conv`` (a CausalConv1d over the cell input, or None), ``input_gate``, ``forget_gate`` and
    ``norm``, and gives ``_cell_input`` (the layer input -> the cell input and what the output needs besides),
    ``_qkv_gates`` and ``_output``."""

    def __init__(self, config: MLSTMLayerConfig, embedding_dim: int, num_blocks: int, inner_dim: int):
        super().__init__()
        self.config = config
        self.embedding_dim = embedding_dim
        self.num_blocks = num_blocks
        self.inner_dim = inner_dim
        self.head_dim = inner_dim // config.num_heads
        self.conv: CausalConv1d | None = None

    def _cell_input(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x (B, S, D) -> (the cell input (B, S, inner), what _output needs besides)"""
        raise NotImplementedError

    def _qkv_gates(self, x_cell: torch.Tensor, x_conv: torch.Tensor):
        """x_cell, x_conv (B, S, inner) -> q, k, v (B, NH, S, DH) and the gate pre-activations i, f (B, NH, S)"""
        raise NotImplementedError

    def _output(self, h: torch.Tensor, x_conv: torch.Tensor, extra: torch.Tensor) -> torch.Tensor:
        """h (B, NH, S, DH), x_conv (B, S, inner) and _cell_input's extra -> (B, S, D)"""
        raise NotImplementedError

    def _reset_parameters(self, input_projections: list[nn.Module], output_projection: nn.Linear) -> None:
        """The official scheme: small init for the projections of the input, Wang init for the one back into the
        residual stream, zero biases; the conv, the gates (their options) and the norm as they initialise."""
        for projection in input_projections:
            small_init_(projection.weight, self.embedding_dim)
        wang_init_(output_projection.weight, self.embedding_dim, self.num_blocks)
        for linear in [*input_projections, output_projection]:
            if linear.bias is not None:
                nn.init.zeros_(linear.bias)
        if self.conv is not None:
            self.conv.reset_parameters()
        self.forget_gate.reset_parameters()
        self.input_gate.reset_parameters()
        self.norm.reset_parameters()

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        """(B, S, inner) -> (B, NH, S, DH), a view (never a copy) of x, whose features may be strided as a whole"""
        return x.view(*x.shape[:2], self.config.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, S, D) -> (B, S, D)"""
        x_cell, extra = self._cell_input(x)  # (B, S, inner), ...
        x_conv = F.silu(self.conv(x_cell)) if self.conv is not None else x_cell
        q, k, v, i, f = self._qkv_gates(x_cell, x_conv)
        cell = getattr(mlstm_kernels, self.config.formulation)
        options = {"chunk_size": self.config.chunk_size} if self.config.formulation == "chunkwise" else {}
        h = cell(
            q,
            k,
            v,
            i,
            f,
            forget_gate=self.config.forget_gate,
            eps=self.config.eps,
            backend=self.config.backend,
            **options,
        )  # (B, NH, S, DH)
        return self._output(h, x_conv, extra)

    def _conv_branch(self, method: str, x_cell: torch.Tensor, conv_state: torch.Tensor | None):
        """silu(causal conv(x_cell)) from the convolution's state by its ``method`` (step or forward_chunk), and
        its next state; x_cell itself without a convolution."""
        if self.conv is None:
            return x_cell, conv_state
        x_conv, conv_state = getattr(self.conv, method)(x_cell, conv_state)
        return F.silu(x_conv), conv_state

    def forward_chunk(self, x: torch.Tensor, state: MLSTMLayerState) -> tuple[torch.Tensor, MLSTMLayerState]:
        """x (B, C, D) from ``state`` -> (B, C, D) and the state after the chunk: the chunkwise cell started from
        the state's (C, n, m), the convolution from its last inputs (one parallel pass, memory linear in C)."""
        x_cell, extra = self._cell_input(x)  # (B, C, inner), ...
        x_conv, conv_state = self._conv_branch("forward_chunk", x_cell, state.conv)  # (B, C, inner)
        q, k, v, i, f = self._qkv_gates(x_cell, x_conv)
        h, cell_state = mlstm_kernels.chunkwise(
            q,
            k,
            v,
            i,
            f,
            initial_state=state.cell,
            return_state=True,
            forget_gate=self.config.forget_gate,
            eps=self.config.eps,
            chunk_size=self.config.chunk_size,
            backend=self.config.backend,
        )  # (B, NH, C, DH)
        return self._output(h, x_conv, extra), MLSTMLayerState(conv=conv_state, cell=cell_state)

    def init_state(self, batch: int) -> MLSTMLayerState:
        """The official zero state: C = n = 0 and stabilizer m = 0."""
        reference = next(self.parameters())
        like = dict(dtype=reference.dtype, device=reference.device)
        NH, DH = self.config.num_heads, self.head_dim
        cell = mlstm_kernels.MLSTMState(
            C=torch.zeros(batch, NH, DH, DH, **like),
            n=torch.zeros(batch, NH, DH, **like),
            m=torch.zeros(batch, NH, **like),
        )
        conv = self.conv.init_state(batch, self.inner_dim, **like) if self.conv is not None else None
        return MLSTMLayerState(conv=conv, cell=cell)

    def step(self, x_t: torch.Tensor, state: MLSTMLayerState) -> tuple[torch.Tensor, MLSTMLayerState]:
        """x_t (B, D) -> y_t (B, D), in constant memory."""
        x_cell, extra = self._cell_input(x_t.unsqueeze(1))  # (B, 1, inner), ...
        x_conv, conv_state = self._conv_branch("step", x_cell[:, 0], state.conv)  # (B, inner)
        x_conv = x_conv.unsqueeze(1)  # (B, 1, inner)
        q, k, v, i, f = self._qkv_gates(x_cell, x_conv)
        h, cell_state = mlstm_kernels.step(
            q,
            k,
            v,
            i,
            f,
            state=state.cell,
            forget_gate=self.config.forget_gate,
            eps=self.config.eps,
            backend=self.config.backend,
        )  # (B, NH, 1, DH)
        return self._output(h, x_conv, extra).squeeze(1), MLSTMLayerState(conv=conv_state, cell=cell_state)


class MLSTMLayer(MLSTMCellLayer):
    """Pre up-projection (paper Figure 10): up-project by 2, mLSTM on a causal-conv branch, head-wise norm, learnable
    skip, output gate, down-project."""

    def __init__(self, config: MLSTMLayerConfig, embedding_dim: int, num_blocks: int):
        super().__init__(config, embedding_dim, num_blocks, config.inner_dim(embedding_dim))
        inner, num_qkv_blocks = self.inner_dim, self.inner_dim // config.qkv_proj_blocksize

        self.proj_up = nn.Linear(embedding_dim, 2 * inner, bias=config.bias)
        self.conv = CausalConv1d(inner, config.conv1d_kernel_size) if config.conv1d_kernel_size > 0 else None
        self.q_proj = HeadwiseLinear(inner, num_qkv_blocks, bias=config.bias)
        self.k_proj = HeadwiseLinear(inner, num_qkv_blocks, bias=config.bias)
        self.v_proj = HeadwiseLinear(inner, num_qkv_blocks, bias=config.bias)
        self.input_gate, self.forget_gate = mlstm_gates(config, 3 * inner)
        self.norm = HeadwiseNorm(config.num_heads, self.head_dim)
        self.learnable_skip = nn.Parameter(torch.ones(inner))
        self.proj_down = nn.Linear(inner, embedding_dim, bias=config.bias)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        self._reset_parameters([self.proj_up, self.q_proj, self.k_proj, self.v_proj], self.proj_down)
        nn.init.ones_(self.learnable_skip)

    def _cell_input(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x_mlstm, z = self.proj_up(x).chunk(2, dim=-1)  # (B, S, inner) each: the cell's input, the output gate's
        return x_mlstm, z

    def _qkv_gates(self, x_mlstm: torch.Tensor, x_conv: torch.Tensor):
        """q and k of x_conv in one op, v of x_mlstm, each viewed in the kernel's (B, NH, S, DH) layout without a
        copy; the gates read [q, k, v] as its parts [q k] and v."""
        qk = headwise_linear(x_conv, [self.q_proj, self.k_proj])  # (B, S, 2, inner)
        v = self.v_proj(x_mlstm)  # (B, S, inner)
        i, f = gate_preactivations([qk.flatten(-2), v], [self.input_gate, self.forget_gate])  # (B, NH, S) each
        q, k = qk.unbind(-2)  # (B, S, inner) each, strided
        return self._heads(q), self._heads(k), self._heads(v), i, f

    def _output(self, h: torch.Tensor, x_conv: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        """h (B, NH, S, DH), x_conv and z (B, S, inner) -> (B, S, D)"""
        h_normed = self.norm(h.transpose(1, 2))  # (B, S, inner)
        return self.proj_down((h_normed + self.learnable_skip * x_conv) * F.silu(z))
