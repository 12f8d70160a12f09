"""A residual stack: blocks, then a final norm; ``init_state``/``step`` thread one state per block. ``through_blocks``
is the step loop of every stack (and the chunk loop of those with a chunked forward)."""

from collections.abc import Iterable
from itertools import repeat
from typing import Any

import torch
from torch import nn


def through_blocks(
    blocks: Iterable[nn.Module],
    method: str,
    x: torch.Tensor,
    state: list[Any],
    block_inputs: Iterable[dict] | None = None,
):
    """x through each block's ``method`` (step or forward_chunk) with the block's entry of ``state`` and, where given,
    its entry of ``block_inputs`` as keyword inputs (e.g. the forget gate's lower bound of an HGRN block): the output
    and the new state, one entry per block."""
    new_state = []
    for block, block_state, inputs in zip(blocks, state, repeat({}) if block_inputs is None else block_inputs):
        x, block_state = getattr(block, method)(x, block_state, **inputs)
        new_state.append(block_state)
    return x, new_state


class BlockStack(nn.Module):
    """(B, S, D) -> (B, S, D). Each block brings forward, init_state(batch) and step(x_t, state)."""

    def __init__(self, blocks: Iterable[nn.Module], post_blocks_norm: nn.Module):
        super().__init__()
        self.blocks = nn.ModuleList(blocks)
        self.post_blocks_norm = post_blocks_norm

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return self.post_blocks_norm(x)

    def init_state(self, batch: int) -> list[Any]:
        return [block.init_state(batch) for block in self.blocks]

    def step(self, x_t: torch.Tensor, state: list[Any]) -> tuple[torch.Tensor, list[Any]]:
        """x_t (B, D) -> (B, D); the state holds one entry per block."""
        x_t, new_state = through_blocks(self.blocks, "step", x_t, state)
        return self.post_blocks_norm(x_t), new_state
