"""Files that appear together or not at all: written into a staging folder beside their destination, then renamed
into place one after the other (renames within a filesystem: microseconds apart), under a lock on the destination
where the writer decides first whether to replace what is there.

A staging folder is removed on every way out that runs Python code (an error, or a stop signal raised as Stopped:
experiments.stop_signals); one left by a process killed outright (SIGKILL) is removed by the next staging in the same
folder, once its process is gone."""

import fcntl
import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from experiments.sweeps.claims import process_is_running

PREFIX = ".staging-"  # .staging-<pid>-<tag>


@contextmanager
def staging_folder(destination: Path) -> Iterator[Path]:
    destination.mkdir(parents=True, exist_ok=True)
    remove_abandoned(destination)
    folder = destination / f"{PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def publish(folder: Path, destination: Path) -> list[Path]:
    """Move every file of the staging folder into ``destination`` (replacing files of the same name)."""
    published = []
    for staged in sorted(folder.iterdir()):
        os.replace(staged, destination / staged.name)
        published.append(destination / staged.name)
    return published


@contextmanager
def locked(destination: Path) -> Iterator[None]:
    """An exclusive lock on the folder ``destination`` while inside: writers that decide whether to replace its files
    and then replace them take turns. fcntl.flock on the folder itself: no lock file is left beside the files, and the
    lock goes with the descriptor, so a killed holder frees it (POSIX fcntl locks would need the folder open for
    writing, which a folder cannot be)."""
    descriptor = os.open(destination, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


def remove_abandoned(destination: Path) -> None:
    for folder in destination.glob(f"{PREFIX}*"):
        pid = folder.name.removeprefix(PREFIX).split("-")[0]
        if pid.isdigit() and not process_is_running(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)
