"""Files that readers find whole or not at all: written to a temporary file beside their place, then renamed into
it (a rename within a folder is atomic), so a crash or a kill midway leaves no partial file under the name."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO


@contextmanager
def whole_file(path: Path) -> Iterator[BinaryIO]:
    """A binary handle whose content becomes ``path`` when the block ends without an error (none otherwise)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp", delete=False)
    try:
        with handle:
            yield handle
        os.chmod(handle.name, 0o644)  # readable like any installed file (a temporary file is private)
        os.replace(handle.name, path)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise


def write_whole(path: Path, content: bytes) -> None:
    with whole_file(path) as handle:
        handle.write(content)
