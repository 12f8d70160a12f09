"""The error every LRA release reader raises on a malformed file: it names the file, the line (or the entry of a
binary file) and the format the reader expected, so a bad download is found before any training."""

from __future__ import annotations

from pathlib import Path


class ReleaseFormatError(ValueError):
    """A release file that does not have the LRA release's format."""

    def __init__(self, path: Path | str, where: str, problem: str, expected: str) -> None:
        super().__init__(f"{path}, {where}: {problem}; expected {expected}")
        self.path, self.where, self.problem, self.expected = Path(path), where, problem, expected


def missing_file(path: Path, what: str) -> FileNotFoundError:
    """The release file ``path`` is not there; ``what`` says which release file and where it comes from."""
    return FileNotFoundError(
        f"{path} not found: {what} (the Long Range Arena release lra_release.gz, "
        "https://github.com/google-research/long-range-arena)"
    )
