"""mLSTM layer of the post up-projection block (Table abl_matrixmemory): the mLSTM at the embedding dim, followed in
its block by a feed-forward as the sLSTM is.

The paper describes the block only as "mLSTM in a post up-projection block [...] with ReLU^2 activation function and
non-gated feed-forward network" (Appendix, Additional Ablation Study on Matrix Memory). Our reading: the mLSTM of
Section 2.3 as a Transformer's attention layer: dense q, k, v and output-gate projections of the layer input (q and
k through the optional causal convolution + swish, as in the pre up-projection block), the scalar gates i, f of the
input, head-wise norm of the cell output, the output gate o = sigmoid(W_o x) and an output projection. With a
non-gated ReLU^2 MLP of factor 4 and no convolution, 24 blocks at E = 1024 have the table's 430.4M (`xlstm-suite
params`)."""

import torch
from torch import nn

from models.xlstm.components import CausalConv1d, HeadwiseNorm
from models.xlstm.config import MLSTMLayerConfig
from models.xlstm.gates import gate_preactivations
from models.xlstm.mlstm_layer import MLSTMCellLayer, mlstm_gates


class MLSTMPostUpProjectionLayer(MLSTMCellLayer):
    """y = W_out (sigmoid(W_o x) * norm(mLSTM(q, k, v, i, f))), all at the embedding dim."""

    def __init__(self, config: MLSTMLayerConfig, embedding_dim: int, num_blocks: int):
        super().__init__(config, embedding_dim, num_blocks, inner_dim=embedding_dim)
        D = embedding_dim
        self.conv = CausalConv1d(D, config.conv1d_kernel_size) if config.conv1d_kernel_size > 0 else None
        self.q_proj = nn.Linear(D, D, bias=config.bias)
        self.k_proj = nn.Linear(D, D, bias=config.bias)
        self.v_proj = nn.Linear(D, D, bias=config.bias)
        self.o_proj = nn.Linear(D, D, bias=config.bias)
        self.input_gate, self.forget_gate = mlstm_gates(config, D)
        self.norm = HeadwiseNorm(config.num_heads, self.head_dim)
        self.proj_out = nn.Linear(D, D, bias=config.bias)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        self._reset_parameters([self.q_proj, self.k_proj, self.v_proj, self.o_proj], self.proj_out)

    def _cell_input(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x, x  # the cell and the output gate both read the layer input

    def _qkv_gates(self, x: torch.Tensor, x_conv: torch.Tensor):
        q, k, v = self.q_proj(x_conv), self.k_proj(x_conv), self.v_proj(x)  # (B, S, D) each
        i, f = gate_preactivations([x], [self.input_gate, self.forget_gate])  # (B, NH, S) each
        return self._heads(q), self._heads(k), self._heads(v), i, f

    def _output(self, h: torch.Tensor, x_conv: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """h (B, NH, S, DH), x (B, S, D) -> (B, S, D)"""
        h_normed = self.norm(h.transpose(1, 2))  # (B, S, D)
        return self.proj_out(torch.sigmoid(self.o_proj(x)) * h_normed)
