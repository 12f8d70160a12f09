"""Configs of the official ``xlstm`` package (NX-AI, v2.0.6) for small stacks of each xLSTM ratio: what the oracle
tests and the benchmarks build their official reference models from (then ``models.xlstm.official.from_official``
gives ours with the same weights).

The official package is an optional (test) dependency: it is imported when a config is built, not with this module.
"""

# ratio -> (num_blocks, sLSTM positions): small stacks that still mix both block types
SMALL_STACKS = {
    "xlstm_1_0": (2, []),
    "xlstm_0_1": (2, [0, 1]),
    "xlstm_1_1": (2, [1]),
    "xlstm_7_1": (8, [3]),
}


def official_config(ratio: str, embedding_dim: int, context_length: int, vocab_size: int | None = None):
    """The official ``xLSTMBlockStackConfig`` of ratio ``ratio``'s small stack (``xLSTMLMModelConfig`` when
    ``vocab_size`` is given): 4 heads, causal convolutions of 4, q/k/v blocks of 4, the sLSTM's "vanilla" (CPU)
    backend with the power-law bias init, and a GeLU MLP of factor 1.3 after each sLSTM."""
    from xlstm import (
        FeedForwardConfig,
        mLSTMBlockConfig,
        mLSTMLayerConfig,
        sLSTMBlockConfig,
        sLSTMLayerConfig,
        xLSTMBlockStackConfig,
        xLSTMLMModelConfig,
    )

    if ratio not in SMALL_STACKS:
        raise ValueError(f"unknown xLSTM ratio {ratio!r}; valid choices: {list(SMALL_STACKS)}")
    num_blocks, slstm_at = SMALL_STACKS[ratio]
    fields = dict(
        mlstm_block=mLSTMBlockConfig(mlstm=mLSTMLayerConfig(conv1d_kernel_size=4, qkv_proj_blocksize=4, num_heads=4)),
        slstm_block=sLSTMBlockConfig(
            slstm=sLSTMLayerConfig(
                backend="vanilla", num_heads=4, conv1d_kernel_size=4, bias_init="powerlaw_blockdependent"
            ),
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
