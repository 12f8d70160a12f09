"""Which checkout's results a report reads and writes: the one the working directory is in, not the one the suite
was installed from (an editable install serves every checkout from one place), so that `xlstm-suite report` run in
a second clone regenerates that clone's reports; outside any checkout, the installed suite's. A report's committed
per-run rows are looked up there, whatever folder the report is written to."""

from pathlib import Path

from experiments.paths import REPOSITORY_ROOT

PROJECT_NAME = 'name = "xlstm-suite"'


def is_checkout(folder: Path) -> bool:
    """A checkout of this suite: its pyproject names the project and it has the artifacts' configs."""
    pyproject = folder / "pyproject.toml"
    return (folder / "configs" / "paper").is_dir() and pyproject.is_file() and PROJECT_NAME in pyproject.read_text()


def working_checkout(start: Path | None = None) -> Path | None:
    """The checkout holding ``start`` (default: the working directory), or None."""
    start = (start or Path.cwd()).resolve()
    return next((folder for folder in (start, *start.parents) if is_checkout(folder)), None)


def repository_root(start: Path | None = None) -> Path:
    """The working directory's checkout, else the installed suite's."""
    return working_checkout(start) or REPOSITORY_ROOT


def repository_reports(start: Path | None = None) -> Path:
    return repository_root(start) / "results" / "reports"


def which_repository(start: Path | None = None) -> str | None:
    """A line saying which checkout's results the command uses, where that is not obvious (the working directory is
    in another checkout than the installed suite's, or in none); None otherwise."""
    checkout = working_checkout(start)
    if checkout == REPOSITORY_ROOT:
        return None
    if checkout is None:
        return (
            f"results of {REPOSITORY_ROOT} (the installed suite's checkout: the working directory is in no "
            "checkout of xlstm-suite)"
        )
    return (
        f"results of {checkout} (the working directory's checkout); code and configs of the installed suite, "
        f"{REPOSITORY_ROOT}"
    )
