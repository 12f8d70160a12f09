"""Resolved run configs as plain containers (dicts, lists and scalars, as ``OmegaConf.to_container`` gives them):
copied, read and set by a dotted key. Planning a grid works on these; an OmegaConf tree costs a hundred times more
to copy, read or write, and is built only where a caller asks for one (experiments.config.artifacts.PlannedRun)."""

from typing import Any

from omegaconf import DictConfig, OmegaConf

MISSING = object()  # what ``value_at`` returns for a key the container lacks


def copied(value: Any) -> Any:
    """A copy of ``value`` whose dicts and lists are new and whose scalars are shared (they are immutable)."""
    if isinstance(value, dict):
        return {key: copied(item) for key, item in value.items()}
    if isinstance(value, list):
        return [copied(item) for item in value]
    return value


def value_at(container: dict, key: str, default: Any = MISSING) -> Any:
    """The value at a dotted key (``optim.lr``), through dicts only; ``default`` where a part of the path is missing
    or not a dict."""
    value = container
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            return default
        value = value[part]
    return value


def set_value(container: dict, key: str, value: Any) -> None:
    """Set a dotted key in place, creating the dicts on its path that are missing (as Hydra's ``+key=value``); the
    caller checks that the path runs through dicts."""
    *parents, last = key.split(".")
    node = container
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value


def as_omegaconf(container: dict) -> DictConfig:
    """The config as an OmegaConf tree, in struct mode as Hydra composes it (a key it lacks is an error)."""
    config = OmegaConf.create(container)
    OmegaConf.set_struct(config, True)
    return config
