"""Builders of official xlstm==2.0.6 models (CPU, sLSTM backend "vanilla") for the oracle tests."""

import torch
from xlstm import (
    FeedForwardConfig,
    mLSTMBlockConfig,
    mLSTMLayerConfig,
    sLSTMBlockConfig,
    sLSTMLayerConfig,
    xLSTMBlockStack,
    xLSTMBlockStackConfig,
    xLSTMLMModel,
    xLSTMLMModelConfig,
)

# ratio -> (num_blocks, sLSTM positions): small stacks that still mix both block types
STACKS = {
    "xlstm_1_0": (2, []),
    "xlstm_0_1": (2, [0, 1]),
    "xlstm_1_1": (2, [1]),
    "xlstm_7_1": (8, [3]),
}


def official_config(ratio: str, embedding_dim: int, context_length: int, vocab_size: int | None = None):
    num_blocks, slstm_at = STACKS[ratio]
    fields = dict(
        mlstm_block=mLSTMBlockConfig(mlstm=mLSTMLayerConfig(conv1d_kernel_size=4, qkv_proj_blocksize=4, num_heads=4)),
        slstm_block=sLSTMBlockConfig(
            slstm=sLSTMLayerConfig(backend="vanilla", num_heads=4, conv1d_kernel_size=4, bias_init="powerlaw_blockdependent"),
            feedforward=FeedForwardConfig(proj_factor=1.3, act_fn="gelu"),
        ),
        context_length=context_length,
        num_blocks=num_blocks,
        embedding_dim=embedding_dim,
        slstm_at=slstm_at,
    )
    if vocab_size is None:
        return xLSTMBlockStackConfig(**fields)
    return xLSTMLMModelConfig(vocab_size=vocab_size, **fields)


def official_model(ratio: str, *, embedding_dim=32, context_length=16, vocab_size=None, dtype=torch.float64, seed=0):
    """An official stack (or LM model when vocab_size is given), initialised, then perturbed so that every
    weight matters (the official init zeroes gate weights and the sLSTM recurrent kernel)."""
    torch.manual_seed(seed)
    config = official_config(ratio, embedding_dim, context_length, vocab_size)
    model = xLSTMLMModel(config) if vocab_size is not None else xLSTMBlockStack(config)
    model.reset_parameters()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.2 * torch.randn_like(parameter))
    return model.to(dtype)
