"""Pre-LayerNorm residual xLSTM blocks and the xLSTM[a:b] stack."""

from typing import Any

import torch
from torch import nn

from models.block_stack import BlockStack, through_blocks
from models.xlstm.components import LayerNorm
from models.xlstm.config import XLSTMStackConfig
from models.xlstm.feedforward import FeedForward
from models.xlstm.mlstm_layer import MLSTMLayer
from models.xlstm.mlstm_post_layer import MLSTMPostUpProjectionLayer
from models.xlstm.slstm_layer import SLSTMLayer


class XLSTMBlock(nn.Module):
    """x + layer(norm(x)); a post up-projection block (every sLSTM block, an mLSTM block with
    ``mlstm_block="post_up_projection"``) then adds x + ffn(norm(x))."""

    def __init__(self, config: XLSTMStackConfig, block_index: int):
        super().__init__()
        D, num_blocks = config.embedding_dim, config.num_blocks
        self.block_type = config.block_types[block_index]
        self.norm = LayerNorm(D)
        self.ffn_norm, self.ffn = None, None
        if self.block_type == "slstm":
            self.layer = SLSTMLayer(config.slstm, D, num_blocks, block_index)
        elif config.mlstm_block == "pre_up_projection":
            self.layer = MLSTMLayer(config.mlstm, D, num_blocks)
        else:
            self.layer = MLSTMPostUpProjectionLayer(config.mlstm, D, num_blocks)
        if self.block_type == "slstm" or config.mlstm_block == "post_up_projection":
            self.ffn_norm = LayerNorm(D)
            self.ffn = FeedForward(config.feedforward, D, num_blocks)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, S, D) -> (B, S, D)"""
        x = x + self.layer(self.norm(x))
        if self.ffn is not None:
            x = x + self.ffn(self.ffn_norm(x))
        return x

    def init_state(self, batch: int) -> Any:
        return self.layer.init_state(batch)

    def forward_chunk(self, x: torch.Tensor, state: Any) -> tuple[torch.Tensor, Any]:
        """x (B, C, D) from ``state`` -> (B, C, D) and the state after the chunk: an mLSTM block in one parallel
        pass (with its feed-forward in a post up-projection block), an sLSTM block (memory mixing: no parallel form)
        step by step."""
        if self.block_type == "mlstm":
            y, state = self.layer.forward_chunk(self.norm(x), state)
            x = x + y
            if self.ffn is not None:
                x = x + self.ffn(self.ffn_norm(x))
            return x, state
        outputs = []
        for x_t in x.unbind(1):  # (B, D) each
            x_t, state = self.step(x_t, state)
            outputs.append(x_t)
        return torch.stack(outputs, dim=1), state  # (B, C, D)

    def step(self, x_t: torch.Tensor, state: Any) -> tuple[torch.Tensor, Any]:
        """x_t (B, D) -> (B, D)"""
        y_t, state = self.layer.step(self.norm(x_t), state)
        x_t = x_t + y_t
        if self.ffn is not None:
            x_t = x_t + self.ffn(self.ffn_norm(x_t))
        return x_t, state


class XLSTMStack(BlockStack):
    """The xLSTM backbone: (B, S, D) -> (B, S, D), with a final LayerNorm after the blocks."""

    def __init__(self, config: XLSTMStackConfig):
        post_blocks_norm = LayerNorm(config.embedding_dim) if config.add_post_blocks_norm else nn.Identity()
        super().__init__((XLSTMBlock(config, index) for index in range(config.num_blocks)), post_blocks_norm)
        self.config = config

    def forward_chunk(self, x: torch.Tensor, state: list[Any]) -> tuple[torch.Tensor, list[Any]]:
        """x (B, C, D) from ``state`` (one entry per block) -> (B, C, D) and the state after the chunk."""
        x, new_state = through_blocks(self.blocks, "forward_chunk", x, state)
        return self.post_blocks_norm(x), new_state
