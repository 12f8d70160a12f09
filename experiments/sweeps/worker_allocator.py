"""The memory allocator of a local sweep's training workers: tcmalloc where it is installed, else the system's.

A training step on CPU allocates and frees tensors of hundreds of MB (a language model's logits and their gradient:
2048 tokens x 50,304 ids x 4 bytes = 412 MB each at the mini recipe). glibc's malloc maps every block above 32 MB
from the kernel and unmaps it when freed, so each step faults all of those pages in again: measured here, a quarter
of a worker's CPU time in the kernel (11.7M page faults in its first 150 s). tcmalloc keeps freed memory for reuse:
Llama at E 192 on temp_sclaw300B's mini recipe, 24 steps on 2 threads, took 3.01 s per step with it and 3.98 s
without, with the same losses; jemalloc at its defaults gave nothing (4.09 s). `benchmarks/worker_allocator.py`
measures the ratio.

The forkserver that forks the workers (experiments.sweeps.local_launcher) starts with the library preloaded
(``LD_PRELOAD``), so every worker it forks has it. The `train` command, run from the command line, executes itself
again with it preloaded (``train_restart``; an allocator is chosen when a process starts). ``XLSTM_SUITE_ALLOCATOR``
chooses: ``tcmalloc`` (the default; the system's where the library is missing, with a note saying how to install it)
or ``system``."""

import ctypes.util
import os
import sys

ALLOCATOR_VARIABLE = "XLSTM_SUITE_ALLOCATOR"
ALLOCATORS = ("tcmalloc", "system")
TCMALLOC_LIBRARY = "tcmalloc_minimal"  # Debian's libtcmalloc-minimal4 (gperftools without its profilers)
TCMALLOC_INSTALL = "apt-get install libtcmalloc-minimal4 (or `make tcmalloc`)"
# tcmalloc reports every allocation above 1 GB on stderr; a worker's log is no place for them
TCMALLOC_QUIET = {"TCMALLOC_LARGE_ALLOC_REPORT_THRESHOLD": str(2**62)}


def chosen_allocator() -> str:
    """The allocator ``XLSTM_SUITE_ALLOCATOR`` names (tcmalloc where unset); ValueError naming the valid choices."""
    allocator = os.environ.get(ALLOCATOR_VARIABLE, "tcmalloc")
    if allocator not in ALLOCATORS:
        raise ValueError(f"{ALLOCATOR_VARIABLE}={allocator!r} is not an allocator; valid choices: {list(ALLOCATORS)}")
    return allocator


def tcmalloc_library() -> str | None:
    """The installed tcmalloc's file name as the dynamic loader finds it (None: not installed)."""
    return ctypes.util.find_library(TCMALLOC_LIBRARY)


def worker_environment(allocator: str) -> tuple[dict[str, str], str | None]:
    """The variables to start the workers' forkserver with for ``allocator``, and a note where tcmalloc was chosen
    but is not installed (the workers then use the system's)."""
    if allocator == "system":
        return {}, None
    library = tcmalloc_library()
    if library is None:
        note = f"tcmalloc is not installed: training workers use the system allocator (slower); {TCMALLOC_INSTALL}"
        return {}, note
    preload = " ".join(filter(None, [library, os.environ.get("LD_PRELOAD")]))
    return {"LD_PRELOAD": preload, **TCMALLOC_QUIET}, None


def train_restart(arguments: list[str]) -> tuple[list[str], dict[str, str]] | None:
    """The command line and environment that run this process's command line (``arguments``: ``sys.argv``) again
    with tcmalloc preloaded, for a `train` command whose allocator (``chosen_allocator``; ValueError for a bad one)
    is tcmalloc, installed and not preloaded yet; None otherwise (the command runs on in this process)."""
    if arguments[1:2] != ["train"]:
        return None
    variables, _ = worker_environment(chosen_allocator())
    if not variables or tcmalloc_library() in os.environ.get("LD_PRELOAD", "").split():
        return None
    return [sys.executable, "-m", "experiments.cli", *arguments[1:]], {**os.environ, **variables}
