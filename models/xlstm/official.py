"""Import a model of the official ``xlstm`` package (NX-AI, v2.0.6) with its weights.

Official layout facts this importer maps (each checked by the oracle tests):
- its LayerNorms apply ``1 + weight``; ours hold the effective weight;
- its sLSTM layer's module ``fgate`` computes the *input* gate and ``igate`` the *forget* gate;
- its sLSTM recurrent kernel is exposed as (NH, DH_in, gate, DH_out) and the bias as (NH, gate, DH);
- up-projection sizes are rounded up to multiples of 64, as in our configs.
"""

import torch
from torch import nn

from models.xlstm.config import (
    FeedForwardConfig,
    MLSTMLayerConfig,
    SLSTMLayerConfig,
    XLSTMLanguageModelConfig,
    XLSTMStackConfig,
)
from models.xlstm.language_model import XLSTMLanguageModel
from models.xlstm.stack import XLSTMStack


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(f"cannot import this official model: {message}")


def _stack_config(official_config) -> XLSTMStackConfig:
    mlstm_layer = official_config.mlstm_block.mlstm if official_config.mlstm_block is not None else None
    slstm_block = official_config.slstm_block
    mlstm = MLSTMLayerConfig()
    if mlstm_layer is not None:
        _require(mlstm_layer.round_proj_up_dim_up, "mLSTM up-projection rounded down is not supported")
        mlstm = MLSTMLayerConfig(
            num_heads=mlstm_layer.num_heads,
            proj_factor=mlstm_layer.proj_factor,
            round_proj_up_to=mlstm_layer.round_proj_up_to_multiple_of,
            conv1d_kernel_size=mlstm_layer.conv1d_kernel_size,
            qkv_proj_blocksize=mlstm_layer.qkv_proj_blocksize,
            bias=mlstm_layer.bias,
        )
    slstm, feedforward = SLSTMLayerConfig(), FeedForwardConfig()
    if slstm_block is not None:
        cell = slstm_block.slstm
        _require(cell.function == "slstm", f"sLSTM cell function {cell.function!r} (only 'slstm')")
        slstm = SLSTMLayerConfig(
            num_heads=cell.num_heads,
            conv1d_kernel_size=cell.conv1d_kernel_size,
            bias_init=cell.bias_init,
            recurrent_weight_init=cell.recurrent_weight_init,
            recurrent_grad_clip=cell.gradient_recurrent_clipval,
        )
        ff = slstm_block.feedforward
        _require(ff is not None, "sLSTM blocks without feed-forward")
        _require(ff.ff_type == "ffn_gated" and ff.round_proj_up_dim_up, f"feed-forward {ff.ff_type!r}")
        feedforward = FeedForwardConfig(
            proj_factor=ff.proj_factor,
            round_proj_up_to=ff.round_proj_up_to_multiple_of,
            activation=ff.act_fn,
            bias=ff.bias,
        )
    return XLSTMStackConfig(
        embedding_dim=official_config.embedding_dim,
        num_blocks=official_config.num_blocks,
        slstm_at=list(official_config.slstm_at),
        mlstm=mlstm,
        slstm=slstm,
        feedforward=feedforward,
        add_post_blocks_norm=official_config.add_post_blocks_norm,
    )


def _copy(target: torch.Tensor, source: torch.Tensor) -> None:
    if target.shape != source.shape:
        raise ValueError(f"shape mismatch while importing: ours {tuple(target.shape)}, official {tuple(source.shape)}")
    target.copy_(source)


def _norm_weight(official_norm) -> torch.Tensor:
    """Effective weight of an official (MultiHead)LayerNorm: ``1 + weight`` with its residual weighting."""
    _require(official_norm.bias is None, "norms with bias")
    if official_norm.weight is None:
        return torch.tensor(1.0)
    return official_norm.weight_proxy


def _copy_linear(ours: nn.Module, theirs: nn.Module) -> None:
    _copy(ours.weight, theirs.weight)
    if getattr(ours, "bias", None) is not None:
        _copy(ours.bias, theirs.bias)


def _copy_mlstm_layer(ours, theirs) -> None:
    for name in ("proj_up", "q_proj", "k_proj", "v_proj", "proj_down"):
        _copy_linear(getattr(ours, name), getattr(theirs, name))
    if ours.conv is not None:
        _copy_linear(ours.conv, theirs.conv1d.conv)
    _copy_linear(ours.input_gate, theirs.mlstm_cell.igate)
    _copy_linear(ours.forget_gate, theirs.mlstm_cell.fgate)
    _copy(ours.norm.weight, _norm_weight(theirs.mlstm_cell.outnorm).expand_as(ours.norm.weight))
    _copy(ours.learnable_skip, theirs.learnable_skip)


def _copy_slstm_layer(ours, theirs) -> None:
    if ours.conv is not None:
        _copy_linear(ours.conv, theirs.conv1d.conv)
    # The official module names are swapped: `fgate` computes the input gate, `igate` the forget gate.
    official_gate_module = {"i": theirs.fgate, "f": theirs.igate, "z": theirs.zgate, "o": theirs.ogate}
    for gate, module in official_gate_module.items():
        _copy(ours.input_proj[gate].weight, module.weight)
    cell = theirs.slstm_cell
    _copy(ours.recurrent_kernel, cell.recurrent_kernel[:].permute(2, 0, 1, 3))  # (NH, DH, 4, DH) -> (4, NH, DH, DH)
    _copy(ours.bias, cell.bias[:].permute(1, 0, 2))  # (NH, 4, DH) -> (4, NH, DH)
    _copy(ours.norm.weight, _norm_weight(theirs.group_norm).expand_as(ours.norm.weight))


def _copy_stack(ours: XLSTMStack, theirs) -> None:
    for our_block, their_block in zip(ours.blocks, theirs.blocks):
        _copy(our_block.norm.weight, _norm_weight(their_block.xlstm_norm))
        if our_block.block_type == "mlstm":
            _copy_mlstm_layer(our_block.layer, their_block.xlstm)
        else:
            _copy_slstm_layer(our_block.layer, their_block.xlstm)
            _copy(our_block.ffn_norm.weight, _norm_weight(their_block.ffn_norm))
            _copy_linear(our_block.ffn.proj_up, their_block.ffn.proj_up)
            _copy_linear(our_block.ffn.proj_down, their_block.ffn.proj_down)
    if ours.config.add_post_blocks_norm:
        _copy(ours.post_blocks_norm.weight, _norm_weight(theirs.post_blocks_norm))


def from_official(official_model: nn.Module) -> XLSTMStack | XLSTMLanguageModel:
    """Our equivalent of an official ``xLSTMBlockStack`` or ``xLSTMLMModel``, with its weights, dtype and device.

    The stack takes embeddings (B, S, D) and the language model token ids (B, S), as the official ones do.
    """
    from xlstm import xLSTMBlockStack, xLSTMLMModel  # the official package is an optional (test) dependency

    if isinstance(official_model, xLSTMLMModel):
        config = official_model.config
        ours = XLSTMLanguageModel(
            XLSTMLanguageModelConfig(
                stack=_stack_config(config), vocab_size=config.vocab_size, tie_weights=config.tie_weights
            )
        )
        official_stack = official_model.xlstm_block_stack
    elif isinstance(official_model, xLSTMBlockStack):
        ours = XLSTMStack(_stack_config(official_model.config))
        official_stack = official_model
    else:
        raise TypeError(
            f"from_official takes an official xLSTMBlockStack or xLSTMLMModel, got {type(official_model).__name__}"
        )
    reference = next(official_model.parameters())
    ours = ours.to(dtype=reference.dtype, device=reference.device)
    with torch.no_grad():
        if isinstance(ours, XLSTMLanguageModel):
            _copy(ours.token_embedding.weight, official_model.token_embedding.weight)
            if not config.tie_weights:
                _copy(ours.lm_head.weight, official_model.lm_head.weight)
            _copy_stack(ours.stack, official_stack)
        else:
            _copy_stack(ours, official_stack)
    return ours
