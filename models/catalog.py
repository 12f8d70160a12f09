"""Every backbone's config by name, without importing torch.

A run config is validated here before anything heavy is imported: ``backbone_config(name, **config)`` builds the
backbone's config dataclass, which raises ValueError naming the bad field and its valid values. The registry
(``models.registry``, imports torch) builds the modules from the same config functions.
"""

import importlib
from dataclasses import dataclass
from types import ModuleType

# Family -> its torch-free module with CONFIGS, LANGUAGE_MODEL_PRESETS and TIED_EMBEDDINGS (xLSTM: CONFIGS only;
# its language models come from the ratio and size presets).
CONFIG_MODULES = {
    "xlstm": "models.xlstm.presets",
    "lstm": "models.lstm.config",
    "transformers": "models.transformers.config",
    "linear_rnn": "models.linear_rnn.config",
    "mamba": "models.mamba.config",
    "rwkv4": "models.rwkv4.config",
    "rwkv5": "models.rwkv5.config",
    "ssm_conv": "models.ssm_conv.config",
}


def config_modules() -> dict[str, ModuleType]:
    return {family: importlib.import_module(module) for family, module in CONFIG_MODULES.items()}


def _configs() -> dict:
    return {name: make for module in config_modules().values() for name, make in module.CONFIGS.items()}


def known_backbones() -> list[str]:
    return sorted(_configs())


def backbone_config(name: str, **config):
    """The validated config dataclass of backbone ``name``; ValueError names a bad value and the valid ones."""
    configs = _configs()
    if name not in configs:
        raise ValueError(f"unknown backbone {name!r}; valid choices: {sorted(configs)}")
    return configs[name](**config)


def language_model_sizes() -> dict[str, dict[str, dict]]:
    """Model name -> size preset (e.g. "350m") -> its backbone config ``{"embedding_dim", "num_blocks", "options"}``:
    the paper's language models of Table spaj_peaklr, torch-free (a run config names a size and is checked against
    it before anything is built)."""
    from models.xlstm.presets import RATIOS, SIZES

    sizes = {ratio: {size: {"embedding_dim": dim, "num_blocks": blocks, "options": {}}
                     for size, (dim, blocks) in SIZES.items()} for ratio in RATIOS if ratio != "xlstm_1_1"}
    for module in config_modules().values():
        for name, presets in getattr(module, "LANGUAGE_MODEL_PRESETS", {}).items():
            sizes[name] = {size: {"embedding_dim": preset["embedding_dim"], "num_blocks": preset["num_blocks"],
                                  "options": {key: value for key, value in preset.items()
                                              if key not in ("embedding_dim", "num_blocks")}}
                           for size, preset in presets.items()}
    return sizes


def ties_embeddings(name: str) -> bool:
    """Whether the paper's language model ``name`` shares its LM head with the token embedding (GPT-3 only)."""
    return any(name in getattr(module, "TIED_EMBEDDINGS", set()) for module in config_modules().values())


@dataclass(frozen=True)
class TrainingPolicy:
    """How the paper trains a model (Appendix B.2). ``compile``: torch.compile ("We use torch.compile to speed up
    models, except for Transformer models as their training curves did not match the non-compiled versions";
    "[...] except for Transformers and models using the flash-linear-attention library because of compilation
    problems"). ``autocast``: bfloat16 mixed precision is PyTorch's automatic mixed precision with float32 weights
    ("for all xLSTMs, Transformers, Mamba and RWKV-4, we use Mixed Precision training with bfloat16 and weights in
    float32"); without it, the float32 weights are cast to bfloat16 by FSDP's parameter dtype alone ("For models from
    flash-linear-attention and RWKV-5/6 models we found that PyTorch automatic mixed precision training did not work,
    but casting the model weights to float32 initially with FSDP parameter precision bfloat16 led to a working
    configuration")."""

    compile: bool = True
    autocast: bool = True


# The models the paper names; every other backbone follows its general procedure (compiled, autocast).
_TRANSFORMERS = TrainingPolicy(compile=False)
_FLASH_LINEAR_ATTENTION = TrainingPolicy(compile=False, autocast=False)  # HGRN, GLA, HGRN2
_RWKV_5_6 = TrainingPolicy(autocast=False)
TRAINING_POLICIES = {"llama": _TRANSFORMERS, "gpt3": _TRANSFORMERS, "hgrn": _FLASH_LINEAR_ATTENTION,
                     "gla": _FLASH_LINEAR_ATTENTION, "hgrn2": _FLASH_LINEAR_ATTENTION, "rwkv5": _RWKV_5_6,
                     "rwkv6": _RWKV_5_6}


def training_policy(name: str) -> TrainingPolicy:
    """The paper's compile and precision recipe for backbone ``name``; ValueError for an unknown backbone."""
    if name not in _configs():
        raise ValueError(f"unknown backbone {name!r}; valid choices: {known_backbones()}")
    return TRAINING_POLICIES.get(name, TrainingPolicy())
