"""Composed run configs kept on disk between commands, so that `list`, `report` and `--dry-run` plan a paper grid
in seconds rather than composing hundreds of configs again.

An entry is keyed by the overrides, the names of the Hydra tree's files (configs/ and the $XLSTM_SUITE_CONFIGS
folders: a file added, removed or renamed may change what a group choice finds), the size presets `model.size` sets
and the Hydra and OmegaConf versions; it records a digest of each config file its compose read
(experiments.config.hydra_files.files_read), and it is used only while every one of them still has that digest. So
no entry is ever stale, and editing one file composes again only the configs that read it: a model's file, its
model's configs (a cold `list` after editing configs/model/mamba.yaml: 57 s when any edit started every entry
afresh, 8.4 s now; a task file that many grids read, 35 s). The artifacts' files (configs/paper) are not among the
names: a run's compose does not read them, and editing one artifact's grid would otherwise start every artifact's
plans afresh (the plan cache keys each plan by its own artifact's file). Overrides that name that folder as a config
group are composed every time, never cached.
An entry holds the resolved config as plain containers (experiments.config.plain_config) and whether its written
config had interpolations (experiments.config.cell_composer). Folder: $XLSTM_SUITE_COMPOSE_CACHE, else
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
# entries of an older format have other keys: 2, keyed by every config file's content, without the files read
ENTRY_FORMAT = 3


def cache_folder() -> Path | None:
    setting = os.environ.get(CACHE_VARIABLE)
    if setting == "off":
        return None
    if setting:
        return Path(setting)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "xlstm-suite" / "compose"


@functools.cache
def tree_fingerprint(extra_folders: tuple[Path, ...] = ()) -> str:
    """configs/ and the $XLSTM_SUITE_CONFIGS folders (configuration.extra_config_folders), every file's name and
    content, with the versions and the size presets that ``model.size`` sets (experiments.config.size_presets)."""
    digest = hashlib.sha256(names_fingerprint(extra_folders).encode())
    for folder in (CONFIGS, *extra_folders):
        for path in _config_files(folder):
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


@functools.cache
def names_fingerprint(extra_folders: tuple[Path, ...] = ()) -> str:
    """As ``tree_fingerprint``, with the files' names but not their content."""
    digest = hashlib.sha256(f"hydra {version('hydra-core')} omegaconf {omegaconf.__version__}".encode())
    digest.update(json.dumps(language_model_sizes(), sort_keys=True).encode())
    for folder in (CONFIGS, *extra_folders):
        if folder != CONFIGS:
            digest.update(b"extra folder\0" + str(folder).encode() + b"\0")
        for path in _config_files(folder):
            digest.update(str(path.relative_to(folder)).encode() + b"\0")
    return digest.hexdigest()


def _config_files(folder: Path) -> list[Path]:
    """A folder's files but the artifacts', in a fixed order."""
    return sorted(path for path in folder.rglob("*") if path.is_file() and not path.is_relative_to(ARTIFACTS))


@functools.cache
def _file_digest(path: str, stamp: tuple[int, int] | None) -> str | None:
    """A file's sha256 (None for a missing file), for its (modification time, size) ``stamp``."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def _current_digest(path: str) -> str | None:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return _file_digest(path, (status.st_mtime_ns, status.st_size))


def _names_the_artifacts_folder(override: str) -> bool:
    """Whether an override selects from configs/paper as a config group (``paper=...``, ``+paper@x=...``)."""
    group = override.split("=", 1)[0].lstrip("+~").split("@", 1)[0]
    return group.split("/", 1)[0] == ARTIFACTS.name


def _entry(overrides: list[str]) -> Path | None:
    folder = cache_folder()
    if folder is None or any(_names_the_artifacts_folder(override) for override in overrides):
        return None
    fingerprint = names_fingerprint(tuple(extra_config_folders()))
    key = hashlib.sha256(json.dumps([ENTRY_FORMAT, fingerprint, list(overrides)]).encode()).hexdigest()
    return folder / key[:2] / f"{key}.json"


def load(overrides: list[str]) -> tuple[dict, bool] | None:
    """(the resolved config, whether it had interpolations) if composed before from the config files as they are
    now, else None. An entry that does not read back as one (damaged, or written by other code) is ignored with a
    warning; the next store replaces it, as it replaces an entry of files since edited."""
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
    if any(_current_digest(path) != digest for path, digest in content["files_read"].items()):
        return None
    return content["config"], content["interpolated"]


def entry_problem(content, overrides: list[str]) -> str | None:
    """What makes ``content`` no entry of ``overrides`` (None if it is one)."""
    if not isinstance(content, dict):
        return f"a JSON {type(content).__name__}, not an object"
    expected = {"config": dict, "interpolated": bool, "overrides": list, "files_read": dict}
    wrong = [key for key, kind in expected.items() if not isinstance(content.get(key), kind)]
    if wrong:
        return f"missing or mistyped {', '.join(wrong)}"
    if content["overrides"] != list(overrides):
        return "an entry of other overrides"
    if not content["config"]:
        return "an empty config"
    if not content["files_read"]:
        return "an entry that names no file read"
    return None


def store(overrides: list[str], config: dict, interpolated: bool, files_read: set[Path]) -> None:
    """Keeps a compose of ``overrides`` and the config files it read (hydra_files.files_read); a compose that saw no
    file read (files loaded afresh at each compose, which files_read cannot see) is not kept."""
    entry = _entry(overrides)
    if entry is None or not files_read:
        return
    digests = {str(path): _current_digest(str(path)) for path in sorted(files_read)}
    content = {"config": config, "interpolated": interpolated, "overrides": list(overrides), "files_read": digests}
    try:
        write_text_atomic(entry, json.dumps(content))
    except OSError:
        pass  # a read-only home: the cache only saves time
