"""Where the suite keeps the paper's numbers, the run store and the reports (the repository's results/), and the check
of a folder a user names instead (--root, --destination)."""

import errno
import os
import stat
from pathlib import Path

REPOSITORY_ROOT = Path(__file__).resolve().parents[1]
RESULTS = REPOSITORY_ROOT / "results"
PAPER_NUMBERS = RESULTS / "paper"
REPORTS = RESULTS / "reports"

# an OS error of looking at a folder -> what it says of the folder
FOLDER_ERRORS = {
    errno.ELOOP: "is a symbolic link loop",
    errno.ENOTDIR: "lies below a file",
    errno.EACCES: "cannot be read",
}


class BadFolder(ValueError):
    """A folder argument the suite cannot use; its message names the option, the path and the problem."""


def checked_folder(path: Path | str, option: str) -> Path:
    """``path`` as a Path if it is a folder the suite can read, or one it can create (missing, below folders);
    BadFolder ("--root <path> is a file, not a folder") before anything is read or written otherwise."""
    path = Path(path)
    problem = folder_problem(path)
    if problem is not None:
        raise BadFolder(f"{option} {path} {problem}")
    return path


def folder_problem(path: Path) -> str | None:
    """Why ``path`` cannot be a folder of the suite's (a file, a symbolic link loop or to nothing, below a file, a
    folder it may not read); None for a readable folder or a missing one that can be created."""
    try:
        status = path.stat()
    except FileNotFoundError:
        return "is a symbolic link to nothing" if path.is_symlink() else None
    except OSError as error:
        return f"{FOLDER_ERRORS.get(error.errno, 'cannot be used')} ({error.strerror})"
    if not stat.S_ISDIR(status.st_mode):
        return "is a file, not a folder"
    if not os.access(path, os.R_OK | os.X_OK):
        return f"cannot be read ({os.strerror(errno.EACCES)})"
    return None
