"""The everyday commands against issue 34's budgets, each in a fresh process as a user runs it: `xlstm-suite list`,
`xlstm-suite report --help` and `xlstm-suite sweep <artifact> --scale paper --dry-run` for every artifact, cold (an
empty cache folder: every config composed) and warm (the same folder again: plans read from the plan cache).

    python -m benchmarks.cli_commands [--repeats 3] [--artifacts NAME ...]

Each row is a command's wall time (the median of --repeats warm runs; one cold run) against its budget: 3 s warm,
15 s cold (the ratio budget / ours: >= 1 meets it). The shape names the CPU time the command's process used and the
machine's load average when it ran: on a shared machine, wall time grows with the load while CPU time does not. The
rows also run in `python -m benchmarks.run --only cli`; a whole run takes minutes (the cold plans compose every
paper grid).
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console

from benchmarks.comparison import Comparison
from experiments.config.artifacts import known_artifacts, load_artifact
from experiments.config.compose_cache import CACHE_VARIABLE
from experiments.paths import REPOSITORY_ROOT

WARM_BUDGET_SECONDS, COLD_BUDGET_SECONDS = 3.0, 15.0  # issue 34: "under 3 s each ... warm and under 15 s cold"


def timed(command: list[str], cache: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of ``xlstm-suite <command>`` in a fresh process with ``cache`` as its cache
    folder; RuntimeError naming the command and its error where it fails."""
    environment = os.environ | {CACHE_VARIABLE: str(cache), "PYTHONPATH": str(REPOSITORY_ROOT)}
    # byte-code is cached as a user's Python caches it (written at first import, as under make), whatever this shell
    # says: with PYTHONDONTWRITEBYTECODE every run would compile torch from source
    environment.pop("PYTHONDONTWRITEBYTECODE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    finished = subprocess.run(
        [sys.executable, "-m", "experiments.cli", *command],
        cwd=REPOSITORY_ROOT,
        env=environment,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if finished.returncode != 0:
        raise RuntimeError(
            f"xlstm-suite {' '.join(command)} failed ({finished.returncode}): {finished.stderr.strip()[-2000:]}"
        )
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def command_rows(label: str, command: list[str], repeats: int) -> list[Comparison]:
    """The command cold (in an empty cache folder) and then warm (``repeats`` times in that folder, the median)."""
    with tempfile.TemporaryDirectory() as folder:
        cold = timed(command, Path(folder))
        warm = [timed(command, Path(folder)) for _ in range(repeats)]
    warm_wall, warm_cpu = statistics.median(wall for wall, _ in warm), statistics.median(cpu for _, cpu in warm)
    return [
        row(label, "warm", warm_wall, warm_cpu, WARM_BUDGET_SECONDS),
        row(label, "cold", *cold, COLD_BUDGET_SECONDS),
    ]


def row(label: str, cache: str, wall: float, cpu: float, budget: float) -> Comparison:
    load = os.getloadavg()[0]
    return Comparison(
        f"cli: {label}",
        f"{cache} cache; {cpu:.1f} s CPU; load {load:.1f}",
        "ms",
        1000 * wall,
        f"issue 34's budget ({budget:g} s {cache})",
        1000 * budget,
        target=1.0,
    )


def comparisons(repeats: int, artifacts: list[str] | None = None) -> list[Comparison]:
    """`list`, `report --help` and every artifact's paper dry run (``artifacts``: only these), cold and warm."""
    rows = command_rows("report --help", ["report", "--help"], repeats)
    rows += command_rows("list", ["list"], repeats)
    for name in artifacts or known_artifacts():
        if "paper" in load_artifact(name).scales:
            rows += command_rows(
                f"sweep {name} --scale paper --dry-run", ["sweep", name, "--scale", "paper", "--dry-run"], repeats
            )
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3, help="warm runs per command (their median is reported)")
    parser.add_argument(
        "--artifacts",
        nargs="+",
        choices=known_artifacts(),
        metavar="NAME",
        help="the artifacts whose paper dry runs to time (default: every artifact)",
    )
    arguments = parser.parse_args(argv)
    console = Console(width=200)
    for comparison in comparisons(arguments.repeats, arguments.artifacts):
        console.print(comparison.as_row())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
