"""Composed run configs kept on disk between commands, so that `list`, `report` and `--dry-run` plan a paper grid
in seconds rather than composing hundreds of configs again.

An entry is keyed by the overrides and a fingerprint of everything a compose reads: every file of the Hydra tree
(configs/, and the $XLSTM_SUITE_CONFIGS folders), the size presets `model.size` sets and the Hydra and OmegaConf
versions. Editing any config file or preset, or upgrading either library, starts a fresh key, so an entry is never
stale. The artifacts' files (configs/paper) are left out: a run's compose does not read them, and editing one
artifact's grid would otherwise start every artifact's plans afresh (the plan cache keys each plan by its own
artifact's file). Overrides that name that folder as a config group are composed every time, never cached. An entry holds the resolved config as plain containers (experiments.config.plain_config) and whether its
written config had interpolations (experiments.config.cell_composer). Folder: $XLSTM_SUITE_COMPOSE_CACHE, else
$XDG_CACHE_HOME/xlstm-suite/compose (default ~/.cache/...), which also holds the planned grids
(experiments.config.plan_cache); XLSTM_SUITE_COMPOSE_CACHE=off switches both off.
"""

import functools
import hashlib
import json
import os
import sys
from importlib.metadata import version
from pathlib import Path

import omegaconf

from experiments.atomic import write_text_atomic
from experiments.config.configuration import ARTIFACTS, CONFIGS, extra_config_folders
from models.catalog import language_model_sizes

CACHE_VARIABLE = "XLSTM_SUITE_COMPOSE_CACHE"
ENTRY_FORMAT = 2  # entries of an older format have other keys: plain configs; interpolations before the size preset


def cache_folder() -> Path | None:
    setting = os.environ.get(CACHE_VARIABLE)
    if setting == "off":
        return None
    if setting:
        return Path(setting)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "xlstm-suite" / "compose"


@functools.cache
def tree_fingerprint(extra_folders: tuple[Path, ...] = ()) -> str:
    """configs/ and the $XLSTM_SUITE_CONFIGS folders (configuration.extra_config_folders), with the versions and
    the size presets that ``model.size`` sets (experiments.config.size_presets)."""
    digest = hashlib.sha256(f"hydra {version('hydra-core')} omegaconf {omegaconf.__version__}".encode())
    digest.update(json.dumps(language_model_sizes(), sort_keys=True).encode())
    for folder in (CONFIGS, *extra_folders):
        if folder != CONFIGS:
            digest.update(b"extra folder\0" + str(folder).encode() + b"\0")
        for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_relative_to(ARTIFACTS)):
            digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _names_the_artifacts_folder(override: str) -> bool:
    """Whether an override selects from configs/paper as a config group (``paper=...``, ``+paper@x=...``)."""
    group = override.split("=", 1)[0].lstrip("+~").split("@", 1)[0]
    return group.split("/", 1)[0] == ARTIFACTS.name


def _entry(overrides: list[str]) -> Path | None:
    folder = cache_folder()
    if folder is None or any(_names_the_artifacts_folder(override) for override in overrides):
        return None
    fingerprint = tree_fingerprint(tuple(extra_config_folders()))
    key = hashlib.sha256(json.dumps([ENTRY_FORMAT, fingerprint, list(overrides)]).encode()).hexdigest()
    return folder / key[:2] / f"{key}.json"


def load(overrides: list[str]) -> tuple[dict, bool] | None:
    """(the resolved config, whether it had interpolations) if composed before, else None. An entry that does not
    read back as one (damaged, or written by other code) is ignored with a warning, and the next store replaces it."""
    entry = _entry(overrides)
    if entry is None or not entry.exists():
        return None
    try:
        content = json.loads(entry.read_text())
        problem = entry_problem(content, overrides)
    except (OSError, ValueError) as error:
        problem = f"unreadable ({error})"
    if problem is not None:
        print(f"warning: compose cache entry {entry} is {problem}; ignored, composing again", file=sys.stderr)
        return None
    return content["config"], content["interpolated"]


def entry_problem(content, overrides: list[str]) -> str | None:
    """What makes ``content`` no entry of ``overrides`` (None if it is one)."""
    if not isinstance(content, dict):
        return f"a JSON {type(content).__name__}, not an object"
    expected = {"config": dict, "interpolated": bool, "overrides": list}
    wrong = [key for key, kind in expected.items() if not isinstance(content.get(key), kind)]
    if wrong:
        return f"missing or mistyped {', '.join(wrong)}"
    if content["overrides"] != list(overrides):
        return "an entry of other overrides"
    if not content["config"]:
        return "an empty config"
    return None


def store(overrides: list[str], config: dict, interpolated: bool) -> None:
    entry = _entry(overrides)
    if entry is None:
        return
    content = {"config": config, "interpolated": interpolated, "overrides": list(overrides)}
    try:
        write_text_atomic(entry, json.dumps(content))
    except OSError:
        pass  # a read-only home: the cache only saves time
