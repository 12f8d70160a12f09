"""Composed run configs kept on disk between commands, so that `list`, `report` and `--dry-run` plan a paper grid
in seconds rather than composing hundreds of configs again.

An entry is keyed by the overrides and a fingerprint of everything a compose reads: every file of the Hydra tree
(configs/) and the Hydra and OmegaConf versions. Editing any config file, or upgrading either library, starts a
fresh key, so an entry is never stale. Folder: $XLSTM_SUITE_COMPOSE_CACHE, else $XDG_CACHE_HOME/xlstm-suite/
compose (default ~/.cache/...); XLSTM_SUITE_COMPOSE_CACHE=off switches the cache off.
"""

import functools
import hashlib
import json
import os
from pathlib import Path

import hydra
import omegaconf
from omegaconf import DictConfig, OmegaConf

from experiments.atomic import write_text_atomic
from experiments.configuration import CONFIGS

CACHE_VARIABLE = "XLSTM_SUITE_COMPOSE_CACHE"


def cache_folder() -> Path | None:
    setting = os.environ.get(CACHE_VARIABLE)
    if setting == "off":
        return None
    if setting:
        return Path(setting)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "xlstm-suite" / "compose"


@functools.cache
def tree_fingerprint() -> str:
    digest = hashlib.sha256(f"hydra {hydra.__version__} omegaconf {omegaconf.__version__}".encode())
    for path in sorted(p for p in CONFIGS.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(CONFIGS)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _entry(overrides: list[str]) -> Path | None:
    folder = cache_folder()
    if folder is None:
        return None
    key = hashlib.sha256(json.dumps([tree_fingerprint(), list(overrides)]).encode()).hexdigest()
    return folder / key[:2] / f"{key}.json"


def load(overrides: list[str]) -> tuple[DictConfig, bool] | None:
    """(the resolved config, whether it had interpolations) if composed before, else None."""
    entry = _entry(overrides)
    if entry is None or not entry.exists():
        return None
    try:
        content = json.loads(entry.read_text())
    except (OSError, ValueError):
        return None  # unreadable entry: compose again (and overwrite it)
    config = OmegaConf.create(content["config"])
    OmegaConf.set_struct(config, content["struct"])
    return config, content["interpolated"]


def store(overrides: list[str], config: DictConfig, interpolated: bool) -> None:
    entry = _entry(overrides)
    if entry is None:
        return
    content = {"config": OmegaConf.to_container(config), "struct": OmegaConf.is_struct(config),
               "interpolated": interpolated, "overrides": list(overrides)}
    try:
        write_text_atomic(entry, json.dumps(content))
    except OSError:
        pass  # a read-only home: the cache only saves time
