"""Backbones and language models by the paper's names."""

from typing import Callable

from torch import nn

from models.xlstm import RATIOS, SIZES, XLSTMLanguageModel, XLSTMStack, XLSTMStackConfig
from models.xlstm.presets import GPT2_VOCAB_PADDED, language_model_config, stack_config


def _xlstm_backbone(ratio: str) -> Callable[..., nn.Module]:
    def build(embedding_dim: int = 128, num_blocks: int = 2, **overrides) -> nn.Module:
        return XLSTMStack(stack_config(ratio, embedding_dim, num_blocks, **overrides))

    return build


def _xlstm_explicit(**config) -> nn.Module:
    return XLSTMStack(XLSTMStackConfig(**config))


_BACKBONES: dict[str, Callable[..., nn.Module]] = {"xlstm": _xlstm_explicit} | {
    ratio: _xlstm_backbone(ratio) for ratio in RATIOS
}

# name -> (sizes, builder(size, vocab_size))
_LANGUAGE_MODELS: dict[str, tuple[tuple[str, ...], Callable[[str, int], nn.Module]]] = {
    ratio: (tuple(SIZES), lambda size, vocab_size, ratio=ratio: XLSTMLanguageModel(language_model_config(ratio, size, vocab_size)))
    for ratio in ("xlstm_1_0", "xlstm_7_1", "xlstm_0_1")
}


def known_backbones() -> list[str]:
    return sorted(_BACKBONES)


def known_language_models() -> dict[str, tuple[str, ...]]:
    """Model name -> the size presets it offers."""
    return {name: sizes for name, (sizes, _) in _LANGUAGE_MODELS.items()}


def build_backbone(name: str, **config) -> nn.Module:
    """A (B, S, D) -> (B, S, D) backbone with init_state/step, built from keyword config."""
    if name not in _BACKBONES:
        raise ValueError(f"unknown backbone {name!r}; valid choices: {known_backbones()}")
    return _BACKBONES[name](**config)


def build_language_model(name: str, size: str, vocab_size: int = GPT2_VOCAB_PADDED) -> nn.Module:
    """The paper's language model ``name`` at size preset ``size`` (e.g. "xlstm_7_1", "350m")."""
    if name not in _LANGUAGE_MODELS:
        raise ValueError(f"unknown language model {name!r}; valid choices: {sorted(_LANGUAGE_MODELS)}")
    sizes, build = _LANGUAGE_MODELS[name]
    if size not in sizes:
        raise ValueError(f"unknown size {size!r} for {name}; valid choices: {list(sizes)}")
    return build(size, vocab_size)
