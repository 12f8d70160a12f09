"""Each config file that Hydra reads, read and parsed once per process.

A Hydra compose loads every file its defaults list names, and its cache of loaded files lasts one compose: planning
every grid (``xlstm-suite list`` on a cold cache) composes 359 structures (experiments.config.cell_composer) from the
same few dozen files, re-reading and re-parsing them each time (68 s here; 56 s with each file loaded once).

``load_each_file_once()`` keeps what Hydra's repository loads from a file (ours under configs/, a plug-in's, Hydra's
own package files) for the process, keyed by the file and its modification time and size, so a file changed on disk
is read again. Each compose gets a copy of a kept file's config: Hydra merges a loaded config into the composed one
without copying its nodes, so overrides applied to one compose (``seed=one``) would reach the next through a shared
one. tests/experiments/config/test_hydra_files.py composes grids' structures with and without, and compares. It
wraps ``ConfigRepository.load_config`` of Hydra's internals: pyproject.toml keeps hydra-core at 1.3.x for that.

``files_read()`` also tells which files a compose read (experiments.config.compose_cache keeps a composed config
while those files are unchanged).
"""

import contextlib
import copy
import os
from collections.abc import Iterator
from pathlib import Path

from hydra._internal.config_repository import ConfigRepository
from hydra.core.object_type import ObjectType

_LOADED: dict[tuple, object] = {}  # (source, config path, file stamp) -> Hydra's ConfigResult
# the sources (by their scheme: Hydra loads its plug-ins' classes under module objects of its own) whose files are
# kept: file:// folders (configs/, a plug-in's) and pkg:// package files (Hydra's own); not a structured config
FILE, PACKAGE = "file", "pkg"
_read_from_source = ConfigRepository.load_config
_RECORDING: list[set[Path]] = []  # the open files_read() blocks' sets


@contextlib.contextmanager
def files_read() -> Iterator[set[Path]]:
    """The files of file:// sources (configs/, the $XLSTM_SUITE_CONFIGS folders) that Hydra loads in the block, with
    files loaded once on (an empty set where they are not: nothing was seen). Package files (Hydra's own) are not
    among them: they change only with the package's version."""
    read: set[Path] = set()
    _RECORDING.append(read)
    try:
        yield read
    finally:
        _RECORDING.remove(read)


def load_each_file_once() -> None:
    """From now on, in this process (idempotent)."""
    ConfigRepository.load_config = _load_config


def forget_loaded_files() -> None:
    """Hydra reads every file again: the state of a fresh process."""
    ConfigRepository.load_config = _read_from_source
    _LOADED.clear()


def _load_config(repository: ConfigRepository, config_path: str):
    source = repository._find_object_source(config_path=config_path, object_type=ObjectType.CONFIG)
    if source is None or source.scheme() not in (FILE, PACKAGE):
        return _read_from_source(repository, config_path)  # e.g. a structured config, which code may change
    if source.scheme() == FILE:
        for read in _RECORDING:
            read.add(_file_of(source, config_path))
    key = (source.scheme(), source.path, config_path, _stamp(source, config_path))
    if key not in _LOADED:
        _LOADED[key] = _read_from_source(repository, config_path)
    loaded = copy.copy(_LOADED[key])
    loaded.config = copy.deepcopy(loaded.config)
    return loaded


def _stamp(source, config_path: str) -> tuple[int, int] | None:
    """A file's modification time and size (None for a package's files, which do not change in a process)."""
    if source.scheme() != FILE:
        return None
    try:
        status = os.stat(_file_of(source, config_path))
    except OSError:
        return None  # Hydra's own read names the problem
    return status.st_mtime_ns, status.st_size


def _file_of(source, config_path: str) -> Path:
    return Path(source.path) / source._normalize_file_name(config_path)
