"""Processes as tests see them through /proc (Linux)."""

from pathlib import Path


def running(pid: int) -> bool:
    """Whether process ``pid`` exists and has not ended (a zombie that no one has reaped yet has ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")
