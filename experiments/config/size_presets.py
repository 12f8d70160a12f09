"""``model.size``: a language model's size preset (Table spaj_peaklr, models.catalog.language_model_sizes) set on a
composed run config as its embedding dim, number of blocks and backbone options, so that a grid over sizes needs
one key and the run config still shows every dim it trains with."""

from omegaconf import DictConfig, OmegaConf

from models.catalog import language_model_sizes

SIZE_KEY = "model.size"
DIM_KEYS = ("model.embedding_dim", "model.num_blocks")


def apply_size_preset(config: DictConfig, overrides: list[str]) -> DictConfig:
    """``config`` with the dims and options of its ``model.size`` preset, in place (a config without one is returned
    as it is); ValueError naming the problem: an unknown size, a model without presets, a dim also set by an
    override, an option that contradicts the preset."""
    size = OmegaConf.select(config, SIZE_KEY, default=None)
    if size is None:
        return config
    name, sizes = config.model.name, language_model_sizes()
    if name not in sizes:
        raise ValueError(
            f"{SIZE_KEY}={size!r}: model {name!r} has no size presets; models with presets: {sorted(sizes)}"
        )
    if str(size) not in sizes[name]:
        raise ValueError(f"{SIZE_KEY}={size!r} is not a size of {name!r}; valid choices: {list(sizes[name])}")
    overridden = {override.split("=", 1)[0].lstrip("+~") for override in overrides}
    clashes = [key for key in DIM_KEYS if key in overridden]
    if clashes:
        raise ValueError(f"{SIZE_KEY}={size} sets {clashes} from its preset; give the size or the dims, not both")
    preset = sizes[name][str(size)]
    options = OmegaConf.to_container(config.model.options, resolve=True) if config.model.get("options") else {}
    contradicted = {
        key: (options[key], value)
        for key, value in preset["options"].items()
        if key in options and options[key] != value
    }
    if contradicted:
        raise ValueError(
            f"{SIZE_KEY}={size}: model.options contradict the preset of {name!r} "
            f"(option: (given, preset)): {contradicted}"
        )
    config.model.embedding_dim = preset["embedding_dim"]
    config.model.num_blocks = preset["num_blocks"]
    config.model.options = preset["options"] | options
    return config
