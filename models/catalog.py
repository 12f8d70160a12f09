"""Every backbone's config by name, without importing torch.

A run config is validated here before anything heavy is imported: ``backbone_config(name, **config)`` builds the
backbone's config dataclass, which raises ValueError naming the bad field and its valid values. The registry
(``models.registry``, imports torch) builds the modules from the same config functions.
"""

import importlib
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
