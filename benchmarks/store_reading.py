"""`xlstm-suite list`'s reading of the run store against the length of its runs, in the same run.

    python -m benchmarks.store_reading [--megabytes 100] [--repeats 3]

Two stores of the sweep runner's fixture artifact with its 6 smoke runs finished, alike but for one run's
metrics.csv: a long run's log (ours, --megabytes) and a short one's (the peer, one row). ``list`` reads a run's
small files only, so the ratio (peer / ours, > 1: ours faster) stays near 1 however long the log; reading the log
made it 60 times slower at 236 MB (issue 36). The rows also run in `python -m benchmarks.run --only store`.
"""

import argparse
import io
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console

from benchmarks.comparison import Comparison
from benchmarks.timing import interleaved_medians
from experiments.config.artifacts import EXTRA_ARTIFACTS_VARIABLE, load_artifact
from experiments.paths import REPOSITORY_ROOT
from experiments.sweeps.run_store import METRICS_FILE, run_directory, write_result, write_run_inputs
from experiments.sweeps.status import list_artifacts

ARTIFACT = "sweep-fixture"  # tests/fixtures: a grid that does not change with the paper's artifacts
HEADER = "step,train/loss,val/loss,val/scaled_accuracy\n"
ROW = "{step},0.6931471805599453,0.6931471805599453,0.015625\n"


def finished_store(root: Path, log_bytes: int) -> None:
    """The fixture's smoke runs finished, the first with a metrics.csv of about ``log_bytes`` bytes, the others with
    one row."""
    for index, run in enumerate(load_artifact(ARTIFACT).runs("smoke")):
        run_dir = run_directory(run, root)
        write_run_inputs(run_dir, run)
        rows = max(1, log_bytes // len(ROW.format(step=10**6))) if index == 0 else 1
        with open(run_dir / METRICS_FILE, "w") as log:
            log.write(HEADER)
            for step in range(rows):
                log.write(ROW.format(step=step))
        write_result(
            run_dir, run, {"val/scaled_accuracy": 0.015625, "test/scaled_accuracy": 0.015625}, datetime.now(UTC)
        )


def list_store(root: Path) -> None:
    Console(file=io.StringIO()).print(list_artifacts(root, [ARTIFACT], ["smoke"]))


def comparisons(megabytes: int, repeats: int) -> list[Comparison]:
    os.environ[EXTRA_ARTIFACTS_VARIABLE] = str(REPOSITORY_ROOT / "tests" / "fixtures")
    with tempfile.TemporaryDirectory() as folder:
        long_runs, short_runs = Path(folder) / "long", Path(folder) / "short"
        finished_store(long_runs, megabytes * 2**20)
        finished_store(short_runs, 0)
        seconds = interleaved_medians(
            {"long": lambda: list_store(long_runs), "short": lambda: list_store(short_runs)}, repeats
        )
    return [
        Comparison(
            "list: a run store of 6 runs",
            f"one metrics.csv {megabytes} MB vs 1 row",
            "ms",
            1000 * seconds["long"],
            "the same store, every log short",
            1000 * seconds["short"],
            target=0.8,
        )
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--megabytes", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    arguments = parser.parse_args(argv)
    for comparison in comparisons(arguments.megabytes, arguments.repeats):
        print(comparison.as_row())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
