"""Backbones and language models by the paper's names.

Each model family contributes, in its torch-free config module (``models.catalog.FAMILY_CONFIGS``), ``CONFIGS``
(name -> config function), ``LANGUAGE_MODEL_PRESETS`` (name -> size -> builder keyword arguments) and
``TIED_EMBEDDINGS`` (the models whose LM head shares the embedding, GPT-3), and in its ``backbones`` module (imported
below) ``MODULES`` (name -> the class of a (B, S, D) -> (B, S, D) module with init_state/step, built from that
config).
"""

from torch import nn

from models.catalog import FAMILY_CONFIGS, backbone_config, tied_embeddings
from models.language_model import LanguageModel
from models.linear_rnn import backbones as linear_rnn
from models.lstm import backbones as lstm
from models.mamba import backbones as mamba
from models.rwkv4 import backbones as rwkv4
from models.rwkv5 import backbones as rwkv5
from models.ssm_conv import backbones as ssm_conv
from models.transformers import backbones as transformers
from models.xlstm import backbones as xlstm
from models.xlstm.config import XLSTMLanguageModelConfig, XLSTMStackConfig
from models.xlstm.language_model import XLSTMLanguageModel
from models.xlstm.presets import GPT2_VOCAB_PADDED, SIZES, language_model_config

FAMILY_BACKBONES = (xlstm, lstm, transformers, linear_rnn, mamba, rwkv4, rwkv5, ssm_conv)
_MODULES: dict[str, type[nn.Module]] = {
    name: module for family in FAMILY_BACKBONES for name, module in family.MODULES.items()
}
_PRESETS: dict[str, dict[str, dict]] = {
    name: presets
    for family in FAMILY_CONFIGS
    for name, presets in getattr(family, "LANGUAGE_MODEL_PRESETS", {}).items()
}
_TIED = tied_embeddings()

_XLSTM_LANGUAGE_MODELS = ("xlstm_1_0", "xlstm_7_1", "xlstm_0_1")


def known_backbones() -> list[str]:
    return sorted(_MODULES)


def known_language_models() -> dict[str, tuple[str, ...]]:
    """Model name -> the size presets it offers."""
    return {name: tuple(SIZES) for name in _XLSTM_LANGUAGE_MODELS} | {
        name: tuple(sizes) for name, sizes in _PRESETS.items()
    }


def build_backbone(name: str, **config) -> nn.Module:
    """A (B, S, D) -> (B, S, D) backbone with init_state/step, built from keyword config."""
    validated = backbone_config(name, **config)  # a ValueError names an unknown backbone or a bad value
    return _MODULES[name](validated)


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


def build_language_model_from(name: str, vocab_size: int, tie_weights: bool = False, **config) -> nn.Module:
    """A language model (tokens (B, S) -> logits (B, S, V)) around backbone ``name`` of any size, built from the
    backbone's keyword config (embedding_dim, num_blocks, options): xLSTM stacks as xLSTM's own language model (the
    official initialisation of embedding and head), every other backbone inside LanguageModel."""
    validated = backbone_config(name, **config)  # a ValueError names an unknown backbone or a bad value
    if isinstance(validated, XLSTMStackConfig):
        return XLSTMLanguageModel(
            XLSTMLanguageModelConfig(stack=validated, vocab_size=vocab_size, tie_weights=tie_weights)
        )
    return LanguageModel(_MODULES[name](validated), vocab_size, config["embedding_dim"], tie_weights=tie_weights)
