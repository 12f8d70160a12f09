"""``model.size``: a language model's size preset (Table spaj_peaklr, models.catalog.language_model_sizes) set on a
composed run config as its embedding dim, number of blocks and backbone options, so that a grid over sizes needs
one key and the run config still shows every dim it trains with."""

from omegaconf import DictConfig, OmegaConf

from models.catalog import language_model_sizes

SIZE_KEY = "model.size"
DIM_KEYS = ("model.embedding_dim", "model.num_blocks")


def size_preset_problem(config: DictConfig, overrides: list[str]) -> str | None:
    """What is wrong with the config's ``model.size`` (None if it is absent or sound): an unknown size, a model
    without presets, a dim also set by an override, an option that contradicts the preset."""
    size = OmegaConf.select(config, SIZE_KEY, default=None)
    if size is None:
        return None
    name, sizes = config.model.name, language_model_sizes()
    if name not in sizes:
        return f"{SIZE_KEY}={size!r}: model {name!r} has no size presets; models with presets: {sorted(sizes)}"
    if str(size) not in sizes[name]:
        return f"{SIZE_KEY}={size!r} is not a size of {name!r}; valid choices: {list(sizes[name])}"
    clashes = [key for key in DIM_KEYS if key in {override.split("=", 1)[0].lstrip("+~") for override in overrides}]
    if clashes:
        return f"{SIZE_KEY}={size} sets {clashes} from its preset; give the size or the dims, not both"
    options = OmegaConf.to_container(config.model.options, resolve=True) if config.model.get("options") else {}
    contradicted = {key: (options[key], value) for key, value in sizes[name][str(size)]["options"].items()
                    if key in options and options[key] != value}
    if contradicted:
        return (f"{SIZE_KEY}={size}: model.options contradict the preset of {name!r} "
                f"(option: (given, preset)): {contradicted}")
    return None


def apply_size_preset(config: DictConfig, overrides: list[str]) -> DictConfig:
    """``config`` with the dims and options of its ``model.size`` preset, in place; ValueError naming the problem
    (size_preset_problem). A config without ``model.size`` is returned as it is."""
    problem = size_preset_problem(config, overrides)
    if problem:
        raise ValueError(problem)
    size = OmegaConf.select(config, SIZE_KEY, default=None)
    if size is None:
        return config
    preset = language_model_sizes()[config.model.name][str(size)]
    options = OmegaConf.to_container(config.model.options, resolve=True) if config.model.get("options") else {}
    config.model.embedding_dim = preset["embedding_dim"]
    config.model.num_blocks = preset["num_blocks"]
    config.model.options = preset["options"] | options
    return config
