"""Generated task data kept on disk, keyed by a hash of the configuration that generates it.

An entry is one ``.npz`` file holding the arrays, the generating configuration (JSON) and a SHA-256 checksum of
both; it is written to a temporary file beside its place and renamed into it, so a reader finds the complete
file or none. An entry that does not read back whole (truncated, corrupted, another configuration's) is reported
in one line on stderr and generated again; its arrays are never used. Folder: $XLSTM_SUITE_DATA_CACHE, else the
repository's results/cache/; XLSTM_SUITE_DATA_CACHE=off switches the cache off.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

CACHE_VARIABLE = "XLSTM_SUITE_DATA_CACHE"
DEFAULT_FOLDER = Path(__file__).resolve().parents[1] / "results" / "cache"
CONFIG_ENTRY, CHECKSUM_ENTRY = "__config__", "__checksum__"

Arrays = dict[str, np.ndarray]


def cache_folder() -> Path | None:
    setting = os.environ.get(CACHE_VARIABLE)
    if setting == "off":
        return None
    return Path(setting) if setting else DEFAULT_FOLDER


def cache_path(name: str, config: Mapping) -> Path | None:
    """Where the entry of ``config`` (JSON-serialisable) lives: ``<folder>/<name>-<hash>.npz``; None if off."""
    folder = cache_folder()
    if folder is None:
        return None
    return folder / f"{name}-{hashlib.sha256(_config_json(config).encode()).hexdigest()[:24]}.npz"


def cached_arrays(name: str, config: Mapping, generate: Callable[[], Arrays]) -> Arrays:
    """The arrays ``generate()`` returns for ``config``: read from the cache when a whole entry is there, else
    generated and stored."""
    path = cache_path(name, config)
    if path is None:
        return generate()
    if path.exists():
        arrays, problem = _read(path, config)
        if problem is None:
            return arrays
        print(f"warning: data cache file {path} is {problem}; generating it again", file=sys.stderr)
    arrays = generate()
    _write(path, config, arrays)
    return arrays


def _config_json(config: Mapping) -> str:
    return json.dumps(config, sort_keys=True)


def _checksum(config_json: str, arrays: Arrays) -> str:
    digest = hashlib.sha256(config_json.encode())
    for key in sorted(arrays):
        array = np.ascontiguousarray(arrays[key])
        digest.update(f"\0{key}\0{array.dtype.str}\0{array.shape}\0".encode())
        digest.update(array.data)
    return digest.hexdigest()


def _read(path: Path, config: Mapping) -> tuple[Arrays, str | None]:
    """The entry's arrays and None, or what is wrong with it."""
    try:
        with open(path, "rb") as handle, np.load(handle, allow_pickle=False) as stored:
            content = {key: stored[key] for key in stored.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as error:
        return {}, f"unreadable ({type(error).__name__}: {error})"
    stored_config, checksum = content.pop(CONFIG_ENTRY, None), content.pop(CHECKSUM_ENTRY, None)
    if stored_config is None or checksum is None:
        return {}, "not a cache entry (no configuration or checksum)"
    if str(stored_config) != _config_json(config):
        return {}, "the entry of another configuration"
    if str(checksum) != _checksum(str(stored_config), content):
        return {}, "corrupt (checksum mismatch)"
    return content, None


def _write(path: Path, config: Mapping, arrays: Arrays) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    config_json = _config_json(config)
    handle = tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp", delete=False)
    temporary = Path(handle.name)
    try:
        with handle:
            np.savez(
                handle,
                **arrays,
                **{CONFIG_ENTRY: np.array(config_json), CHECKSUM_ENTRY: np.array(_checksum(config_json, arrays))},
            )
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
