"""Compose run configs from the Hydra tree in configs/, and check them before any compute.

``XLSTM_SUITE_CONFIGS`` adds Hydra config folders (os.pathsep-separated), searched after configs/: their group
folders add options, e.g. ``<folder>/task/<name>.yaml`` for a plugged-in task family (tasks.registry)."""

import os
from pathlib import Path

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from experiments.config.size_presets import apply_size_preset
from experiments.paths import REPOSITORY_ROOT

CONFIGS = REPOSITORY_ROOT / "configs"
ARTIFACTS = CONFIGS / "paper"  # the artifacts' files (experiments.config.artifacts), not a group of the run config
CONFIG_GROUPS = ("model", "task", "optim", "trainer")  # choosing one changes the config's structure
EXTRA_CONFIGS_VARIABLE = "XLSTM_SUITE_CONFIGS"


class ConfigError(ValueError):
    """A bad override or an inconsistent config; the message names the value and the valid choices."""


def extra_config_folders() -> list[Path]:
    """The folders of $XLSTM_SUITE_CONFIGS, in order."""
    return [Path(folder).resolve() for folder in os.environ.get(EXTRA_CONFIGS_VARIABLE, "").split(os.pathsep) if folder]


def group_choices(group: str) -> list[str]:
    """The options of a config group (``model``, ``task``, ...): its YAML files, without private ``_`` ones."""
    return sorted(
        {
            p.stem
            for folder in [CONFIGS, *extra_config_folders()]
            for p in (folder / group).glob("*.yaml")
            if not p.stem.startswith("_")
        }
    )


def compose_run_config(overrides: list[str]) -> DictConfig:
    """The fully resolved config of one run (``configs/train.yaml`` plus Hydra overrides)."""
    return resolve_run_config(compose_unresolved(overrides), overrides)


def task_config(name: str) -> dict:
    """The task config ``task=<name>`` composes to, resolved, as a plain mapping."""
    return OmegaConf.to_container(compose_run_config([f"task={name}"]).task, resolve=True)


def resolve_run_config(config: DictConfig, overrides: list[str]) -> DictConfig:
    """``config`` (composed from ``overrides``) with its interpolations resolved and its ``model.size`` preset set
    (experiments.config.size_presets), in place."""
    return with_size_preset(resolve_interpolations(config, overrides), overrides)


def resolve_interpolations(config: DictConfig, overrides: list[str]) -> DictConfig:
    """``config`` with its interpolations resolved, in place (ConfigError naming the overrides)."""
    try:
        OmegaConf.resolve(config)
    except OmegaConfBaseException as error:
        raise ConfigError(f"bad override in {list(overrides)}: {error}") from None
    return config


def with_size_preset(config: DictConfig, overrides: list[str]) -> DictConfig:
    """``config`` with its ``model.size`` preset set, in place (ConfigError naming the problem)."""
    try:
        return apply_size_preset(config, overrides)
    except ValueError as error:
        raise ConfigError(str(error)) from None


def compose_unresolved(overrides: list[str]) -> DictConfig:
    """``compose_run_config`` before interpolations are resolved."""
    from hydra.errors import HydraException  # Hydra is imported only to compose: a cached plan needs none of it

    for override in overrides:
        if "=" not in override:
            raise ConfigError(f"malformed override {override!r}: expected key=value (e.g. optim.lr=1e-3)")
        key, value = override.split("=", 1)
        group = key.lstrip("+~")
        if group in CONFIG_GROUPS and value not in group_choices(group):
            raise ConfigError(f"unknown {group} {value!r}; valid choices: {group_choices(group)}")
    try:
        return compose_train(overrides)
    except (HydraException, OmegaConfBaseException) as error:
        appended = with_new_keys_appended(overrides)
        if appended != list(overrides):
            try:
                return compose_train(appended)  # the run schema names each key that no code reads
            except (HydraException, OmegaConfBaseException):
                pass
        raise ConfigError(f"bad override in {list(overrides)}: {error}") from None


def compose_train(overrides: list[str]) -> DictConfig:
    from hydra import compose, initialize_config_dir

    from experiments.config.hydra_files import load_each_file_once

    load_each_file_once()
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        return compose(config_name="train", overrides=[*search_path_overrides(), *overrides])


def search_path_overrides() -> list[str]:
    """Hydra's ``hydra.searchpath`` override for the $XLSTM_SUITE_CONFIGS folders (none without them)."""
    folders = extra_config_folders()
    if not folders:
        return []
    quoted = ("'file://" + str(folder).replace("\\", "\\\\").replace("'", "\\'") + "'" for folder in folders)
    return [f"hydra.searchpath=[{','.join(quoted)}]"]


def with_new_keys_appended(overrides: list[str]) -> list[str]:
    """The overrides with ``+`` before each ``key=value`` whose key the config lacks.

    Hydra refuses such an override with a hint to append it (``+optim.lrr=1e-3``), which would train with the typo
    kept silently; appended, the key reaches the run schema, which rejects it and names the closest valid keys.
    Model options (an open mapping checked by the backbone's config) may so be set without ``+``."""
    choices = [override for override in overrides if override.split("=", 1)[0] in CONFIG_GROUPS]
    base = compose_train(choices)
    missing = object()
    return [
        f"+{override}"
        if override[0] not in "+~"
        and override not in choices
        and OmegaConf.select(base, override.split("=", 1)[0], default=missing) is missing
        else override
        for override in overrides
    ]


def config_yaml(config: DictConfig) -> str:
    return OmegaConf.to_yaml(config, sort_keys=True)


def load_yaml(path: Path) -> DictConfig:
    return OmegaConf.load(path)
