"""A throw-away copy of the repository, as a clean clone holds it, for tests that run the real command line.

Commands run in the copy write only there (its own results/), however they go wrong; the copy shares the
installed .venv, and PYTHONPATH points the suite's imports at the copy rather than the editable install.
"""

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPOSITORY_ROOT = Path(__file__).resolve().parents[1]
INSTALL_MARKER = ".installed"  # the Makefile's


def copy_repository(destination: Path) -> Path:
    """Tracked files and untracked ones git does not ignore (what a clone of this working tree would hold), with
    their modification times (so make sees .venv as up to date), and a link to the installed .venv."""
    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPOSITORY_ROOT,
            check=True,
            capture_output=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, listed):
        source = REPOSITORY_ROOT / name
        if source.is_file():  # a tracked file deleted in the working tree is listed too
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    if Path(sys.prefix) != Path(sys.base_prefix):
        link_environment(Path(sys.prefix), destination / ".venv")
    return destination


def link_environment(venv: Path, link: Path) -> None:
    """A .venv folder whose entries link to the installed environment's, with a fresh install marker of its own:
    the Makefile's install step (which runs when pyproject.toml is newer than the marker) never reinstalls the
    shared environment from the copy."""
    link.mkdir()
    for entry in venv.iterdir():
        if entry.name != INSTALL_MARKER:
            (link / entry.name).symlink_to(entry)
    (link / INSTALL_MARKER).touch()


def environment(copy: Path, **variables: str) -> dict[str, str]:
    """This environment with the copy first on PYTHONPATH and the given variables set."""
    return os.environ | {"PYTHONPATH": str(copy)} | variables


@dataclass
class Finished:
    command: str
    returncode: int
    output: str
    seconds: float


def run_in(copy: Path, command: str, env: dict[str, str] | None = None, timeout: float = 900) -> Finished:
    """Run a shell command in the copy; stdout and stderr together."""
    started = time.perf_counter()
    process = subprocess.run(
        command, shell=True, cwd=copy, env=env or environment(copy), capture_output=True, text=True, timeout=timeout
    )
    return Finished(command, process.returncode, process.stdout + process.stderr, time.perf_counter() - started)


def tree_state(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder`` with its size and modification time (to tell that nothing was written)."""
    return {
        str(path.relative_to(folder)): (path.stat().st_size, path.stat().st_mtime_ns)
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }
