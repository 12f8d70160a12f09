"""Processes as tests see them through /proc (Linux)."""

import sys
from pathlib import Path


def running(pid: int) -> bool:
    """Whether process ``pid`` exists and has not ended (a zombie that no one has reaped yet has ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def exit_with_tcmalloc_mapped() -> None:
    """A process's target: exit 0 where this process has tcmalloc mapped, 1 where it has not."""
    sys.exit(0 if "tcmalloc" in Path("/proc/self/maps").read_text() else 1)
