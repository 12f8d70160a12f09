"""Atomic file writes: a reader sees the old file or the complete new one, never a half-written one."""

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO


def _readable_mode() -> int:
    """0666 less the umask: what a plain open() would create (NamedTemporaryFile makes 0600 files)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def temporary_prefix(path: Path) -> str:
    """The name prefix of ``path``'s temporary files: ``.<name>.``."""
    return f".{path.name}."


def write_atomic(path: Path, write: Callable[[IO], None], binary: bool = False) -> None:
    """Let ``write`` fill a temporary file beside ``path`` (same filesystem, so the rename is atomic), then rename it
    into place; the temporary file is removed on every failure (a full disk may fail the write or only the flush at
    close)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = tempfile.NamedTemporaryFile(
        "wb" if binary else "w", dir=path.parent, prefix=temporary_prefix(path), delete=False
    )
    temporary = Path(handle.name)
    try:
        with handle:
            write(handle)
        os.chmod(temporary, _readable_mode())
        os.replace(temporary, path)
    except BaseException as error:
        temporary.unlink(missing_ok=True)
        if (
            isinstance(error, OSError) and error.errno is not None and error.filename is None
        ):  # a write or flush names no file
            raise OSError(error.errno, error.strerror, str(path)) from error
        raise


def write_text_atomic(path: Path, text: str) -> None:
    write_atomic(path, lambda handle: handle.write(text))
