"""Every backbone's config by name, without importing torch.

A run config is validated here before anything heavy is imported: ``backbone_config(name, **config)`` builds the
backbone's config dataclass, which raises ValueError naming the bad field and its valid values. The registry
(``models.registry``, imports torch) builds the modules from the same config functions.
"""

from dataclasses import dataclass

from models.linear_rnn import config as linear_rnn
from models.lstm import config as lstm
from models.mamba import config as mamba
from models.rwkv4 import config as rwkv4
from models.rwkv5 import config as rwkv5
from models.ssm_conv import config as ssm_conv
from models.transformers import config as transformers
from models.xlstm import presets as xlstm

# The torch-free config module of every model family, each with CONFIGS (backbone name -> config function) and
# DISPLAY_NAMES (model name -> the paper's name), most with LANGUAGE_MODEL_PRESETS (name -> size -> backbone config)
# and TIED_EMBEDDINGS (the names whose LM head is the token embedding); xLSTM's language models come from its ratio and
# size presets. A family adds its module here and its ``backbones`` module to models.registry.
FAMILY_CONFIGS = (xlstm, lstm, transformers, linear_rnn, mamba, rwkv4, rwkv5, ssm_conv)


def _configs() -> dict:
    return {name: make for family in FAMILY_CONFIGS for name, make in family.CONFIGS.items()}


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
    sizes = {
        ratio: {
            size: {"embedding_dim": dim, "num_blocks": blocks, "options": {}}
            for size, (dim, blocks) in xlstm.SIZES.items()
        }
        for ratio in xlstm.RATIOS
        if ratio != "xlstm_1_1"
    }
    for family in FAMILY_CONFIGS:
        for name, presets in getattr(family, "LANGUAGE_MODEL_PRESETS", {}).items():
            sizes[name] = {
                size: {
                    "embedding_dim": preset["embedding_dim"],
                    "num_blocks": preset["num_blocks"],
                    "options": {
                        key: value for key, value in preset.items() if key not in ("embedding_dim", "num_blocks")
                    },
                }
                for size, preset in presets.items()
            }
    return sizes


def tied_embeddings() -> set[str]:
    """The paper's language models whose LM head shares the token embedding (GPT-3 only)."""
    return {name for family in FAMILY_CONFIGS for name in getattr(family, "TIED_EMBEDDINGS", set())}


def display_name(model: str) -> str:
    """The paper's name of a model (its model config's name, configs/model): "xlstm_7_1" -> "xLSTM[7:1]", "mamba_tied"
    -> "Mamba (WT)"; a name no family gives (a test's toy model) as it is."""
    names = {name: shown for family in FAMILY_CONFIGS for name, shown in family.DISPLAY_NAMES.items()}
    return names.get(model, model)


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
TRAINING_POLICIES = {
    "llama": _TRANSFORMERS,
    "gpt3": _TRANSFORMERS,
    "hgrn": _FLASH_LINEAR_ATTENTION,
    "gla": _FLASH_LINEAR_ATTENTION,
    "hgrn2": _FLASH_LINEAR_ATTENTION,
    "rwkv5": _RWKV_5_6,
    "rwkv6": _RWKV_5_6,
}


def training_policy(name: str) -> TrainingPolicy:
    """The paper's compile and precision recipe for backbone ``name``; ValueError for an unknown backbone."""
    if name not in _configs():
        raise ValueError(f"unknown backbone {name!r}; valid choices: {known_backbones()}")
    return TRAINING_POLICIES.get(name, TrainingPolicy())
