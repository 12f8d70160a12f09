"""Backbones and language models by the paper's names.

A model family contributes ``BACKBONES`` (name -> builder(embedding_dim, num_blocks, **options) of a
(B, S, D) -> (B, S, D) module with init_state/step) and ``LANGUAGE_MODEL_PRESETS`` (name -> size -> builder
keyword arguments); ``TIED_EMBEDDINGS`` names the models whose LM head shares the embedding (GPT-3).
"""

from typing import Callable

from torch import nn

import models.lstm
import models.mamba
import models.rwkv4
import models.rwkv5
import models.ssm_conv
from models import linear_rnn
from models import transformers as transformer_models
from models.language_model import LanguageModel
from models.xlstm import RATIOS, SIZES, XLSTMLanguageModel, XLSTMStack, XLSTMStackConfig
from models.xlstm.presets import GPT2_VOCAB_PADDED, language_model_config, stack_config

# Baseline families: modules with BACKBONES, LANGUAGE_MODEL_PRESETS, TIED_EMBEDDINGS.
FAMILIES = [
    models.lstm, transformer_models, linear_rnn, models.mamba, models.rwkv4, models.rwkv5, models.ssm_conv,
]


def _xlstm_backbone(ratio: str) -> Callable[..., nn.Module]:
    def build(embedding_dim: int = 128, num_blocks: int = 2, **overrides) -> nn.Module:
        return XLSTMStack(stack_config(ratio, embedding_dim, num_blocks, **overrides))

    return build


def _xlstm_explicit(**config) -> nn.Module:
    return XLSTMStack(XLSTMStackConfig(**config))


_BACKBONES: dict[str, Callable[..., nn.Module]] = {"xlstm": _xlstm_explicit} | {
    ratio: _xlstm_backbone(ratio) for ratio in RATIOS
}
_PRESETS: dict[str, dict[str, dict]] = {}
_TIED: set[str] = set()
for _family in FAMILIES:
    _BACKBONES.update(_family.BACKBONES)
    _PRESETS.update(_family.LANGUAGE_MODEL_PRESETS)
    _TIED.update(_family.TIED_EMBEDDINGS)

_XLSTM_LANGUAGE_MODELS = ("xlstm_1_0", "xlstm_7_1", "xlstm_0_1")


def known_backbones() -> list[str]:
    return sorted(_BACKBONES)


def known_language_models() -> dict[str, tuple[str, ...]]:
    """Model name -> the size presets it offers."""
    return {name: tuple(SIZES) for name in _XLSTM_LANGUAGE_MODELS} | {
        name: tuple(sizes) for name, sizes in _PRESETS.items()
    }


def build_backbone(name: str, **config) -> nn.Module:
    """A (B, S, D) -> (B, S, D) backbone with init_state/step, built from keyword config."""
    if name not in _BACKBONES:
        raise ValueError(f"unknown backbone {name!r}; valid choices: {known_backbones()}")
    return _BACKBONES[name](**config)


def build_language_model(name: str, size: str, vocab_size: int = GPT2_VOCAB_PADDED) -> nn.Module:
    """The paper's language model ``name`` at size preset ``size`` (e.g. "xlstm_7_1", "350m")."""
    sizes = known_language_models()
    if name not in sizes:
        raise ValueError(f"unknown language model {name!r}; valid choices: {sorted(sizes)}")
    if size not in sizes[name]:
        raise ValueError(f"unknown size {size!r} for {name}; valid choices: {list(sizes[name])}")
    if name in _XLSTM_LANGUAGE_MODELS:
        return XLSTMLanguageModel(language_model_config(name, size, vocab_size))
    preset = dict(_PRESETS[name][size])
    backbone = build_backbone(name, **preset)
    return LanguageModel(backbone, vocab_size, preset["embedding_dim"], tie_weights=name in _TIED)
