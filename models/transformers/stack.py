"""The GPT-3 and Llama backbones, one class: Transformer blocks (models.transformers.block), then a final norm, with
``step`` through a key-value cache per block. The config's ``architecture`` picks GPT-3's or Llama's.

GPT-3 (Brown et al. 2020) as GPT-2: learned absolute positions added to the input, pre-LayerNorm blocks with biases,
GeLU MLP (4D), final LayerNorm; the language model ties its head to the token embedding. Where the xLSTM paper
leaves details open:
- dense causal attention in every block (GPT-3's alternating locally banded sparse layers are not used);
- initialisation as GPT-2 (HF ``GPT2PreTrainedModel``): weights and positions N(0, 0.02), the two residual output
  projections of each block N(0, 0.02 / sqrt(2 num_blocks)), biases 0, LayerNorms (1, 0);
- LayerNorm eps 1e-5, head dim 64 unless ``num_heads`` is set, context length 2048 (the paper's).

Llama (Touvron et al. 2023): pre-RMSNorm blocks, rotary positions, SwiGLU MLP, no biases, final RMSNorm. Where the
xLSTM paper leaves details open:
- FFN hidden size 8/3 D rounded up to a multiple of 64. This reproduces all five Llama counts of Table spaj_peaklr
  exactly (e.g. 2752 at D = 1024, 5504 at D = 2048); Meta's multiple_of = 256 (configurable via
  ``ffn_multiple_of``) would overshoot the 350M, 1.3B and 2.7B counts by 1.2%, 1.3% and 0.6%;
- RMSNorm eps 1e-5 (Meta's reference default), rope theta 10000, head dim 64 unless ``num_heads`` is set;
- initialisation as HF ``LlamaPreTrainedModel``: every linear weight N(0, 0.02), norm weights 1 (Meta's reference
  code has no training initialisation).
"""

import math

import torch
from torch import nn

from models.block_stack import through_blocks
from models.transformers.block import TransformerBlock
from models.transformers.config import GPT3Config, LlamaConfig


class TransformerStack(nn.Module):
    """(B, S, D) -> (B, S, D): GPT-3's learned positions added (none for Llama, whose attention rotates q and k), the
    blocks, a final norm; ``step`` with a key-value cache per block."""

    def __init__(self, config: GPT3Config | LlamaConfig):
        super().__init__()
        self.config = config
        llama = config.architecture == "llama"
        if not llama:
            self.position_embedding = nn.Embedding(config.max_context_length, config.embedding_dim)
        self.blocks = nn.ModuleList(TransformerBlock(config) for _ in range(config.num_blocks))
        self.final_norm = (nn.RMSNorm if llama else nn.LayerNorm)(config.embedding_dim, eps=config.norm_eps)
        self.reset_parameters()

    @property
    def learned_positions(self) -> bool:
        return self.config.architecture == "gpt3"

    def reset_parameters(self) -> None:
        std = self.config.init_std
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=std)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)
            elif isinstance(module, (nn.LayerNorm, nn.RMSNorm)):
                module.reset_parameters()
        if self.learned_positions:
            for block in self.blocks:
                for residual_proj in (block.attention.out_proj, block.mlp.down_proj):
                    nn.init.normal_(residual_proj.weight, std=std / math.sqrt(2 * self.config.num_blocks))

    def _check_length(self, length: int) -> None:
        if length > self.config.max_context_length:
            raise ValueError(
                f"sequence length {length} exceeds gpt3.max_context_length={self.config.max_context_length}"
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, S, D) -> (B, S, D)"""
        if self.learned_positions:
            self._check_length(x.shape[1])
            x = x + self.position_embedding.weight[: x.shape[1]]  # (B, S, D)
        for block in self.blocks:
            x = block(x)
        return self.final_norm(x)

    def init_state(self, batch: int) -> list:
        return [block.attention.init_state(batch) for block in self.blocks]

    def init_static_state(self, batch: int, capacity: int) -> list:
        """One static key-value cache of ``capacity`` positions per block (models.transformers.attention)."""
        return [block.attention.init_static_state(batch, capacity) for block in self.blocks]

    def step(self, x_t: torch.Tensor, state: list) -> tuple[torch.Tensor, list]:
        """x_t (B, D) -> (B, D); the state holds one key-value cache per block, whose length is the position of x_t."""
        if self.learned_positions:
            position = state[0].length
            self._check_length(position + 1)
            x_t = x_t + self.position_embedding.weight[position]  # (B, D)
        x_t, new_state = through_blocks(self.blocks, "step", x_t, state)
        return self.final_norm(x_t), new_state
