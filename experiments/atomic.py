"""Atomic file writes: a reader sees the old file or the complete new one, never a half-written one."""

import os
import tempfile
from pathlib import Path


def _readable_mode() -> int:
    """0666 less the umask: what a plain open() would create (NamedTemporaryFile makes 0600 files)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_text_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=f".{path.name}.", delete=False) as handle:
        temporary = Path(handle.name)
        try:
            handle.write(text)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
    os.chmod(temporary, _readable_mode())
    os.replace(temporary, path)
