"""Two reports of the same artifact racing to the same folder: the one with fewer finished cells never replaces the
other's, whichever finishes first; it says so and exits 1. The check is made under a lock on the folder, at the
moment of replacement (not only before the figures are drawn)."""

import fcntl
import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import pytest

from experiments.config.artifacts import load_artifact
from experiments.paths import REPOSITORY_ROOT
from experiments.reports.staging import locked
from experiments.sweeps.run_store import run_directory, write_result, write_run_inputs
from tests.sweep_fakes import record_run

RUNS = load_artifact("sweep-fixture").runs("smoke")  # 6 runs, one per cell


def store(root: Path, count: int) -> Path:
    """A run store with the first ``count`` of the fixture's runs finished (written here: no worker)."""
    for run in RUNS[:count]:
        run_dir = run_directory(run, root)
        write_run_inputs(run_dir, run)
        write_result(run_dir, run, record_run(run.config, run_dir), datetime.now(timezone.utc))
    return root


def report_arguments(root: Path, destination: Path) -> list[str]:
    return ["sweep-fixture", "--scale", "smoke", "--root", str(root), "--destination", str(destination)]


def finished_cells(destination: Path) -> int:
    return int((pd.read_csv(destination / "smoke" / "sweep-fixture.csv")["runs"] > 0).sum())


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    base = tmp_path_factory.mktemp("stores")
    return store(base / "six", 6), store(base / "two", 2)


def test_a_report_with_fewer_cells_finishing_after_one_with_more_does_not_replace_it(stores, tmp_path):
    six, two = stores
    destination, ready, go = tmp_path / "reports", tmp_path / "ready", tmp_path / "go"
    fewer = subprocess.Popen([sys.executable, "-m", "tests.paused_report", str(ready), str(go),
                              *report_arguments(two, destination)],
                             cwd=REPOSITORY_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        while not ready.exists():  # it has found no report to keep and drawn its figures
            assert fewer.poll() is None and time.monotonic() < deadline, fewer.stdout.read()
            time.sleep(0.05)
        more = subprocess.run([sys.executable, "-m", "experiments.cli", "report", *report_arguments(six, destination)],
                              cwd=REPOSITORY_ROOT, capture_output=True, text=True, timeout=120)
        assert more.returncode == 0 and finished_cells(destination) == 6, more.stdout + more.stderr
        go.touch()
        output = fewer.communicate(timeout=120)[0]
    finally:
        fewer.kill()
    assert fewer.returncode == 1, output
    assert finished_cells(destination) == 6
    assert "not written: another report replaced it meanwhile; kept" in " ".join(output.split())
    assert "it has 6 finished cells, this report would have 2 of 6" in " ".join(output.split())
    assert [path.name for path in (destination / "smoke").iterdir() if path.name.startswith(".")] == []  # no staging


def test_the_lock_on_a_report_folder_excludes_other_processes_until_released(tmp_path):
    try_lock = ("import fcntl, os, sys\ndescriptor = os.open(sys.argv[1], os.O_RDONLY)\n"
                "try:\n    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)\nexcept BlockingIOError:\n"
                "    sys.exit(3)\n")

    def other_process_locks() -> int:
        return subprocess.run([sys.executable, "-c", try_lock, str(tmp_path)]).returncode

    with locked(tmp_path):
        assert other_process_locks() == 3
    assert other_process_locks() == 0
    assert os.listdir(tmp_path) == []  # no lock file


@pytest.mark.slow  # three rounds of two reports at once (about 10 s each)
def test_two_reports_started_together_leave_the_one_with_more_cells(stores, tmp_path):
    six, two = stores
    for round_ in range(3):
        destination = tmp_path / f"round-{round_}"
        reports = [subprocess.Popen([sys.executable, "-m", "experiments.cli", "report", *report_arguments(root, destination)],
                                    cwd=REPOSITORY_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                   for root in (six, two)]
        outputs = [report.communicate(timeout=300)[0] for report in reports]
        assert reports[0].returncode == 0, outputs[0]
        assert finished_cells(destination) == 6
        if reports[1].returncode != 0:  # it finished last: it says why it wrote nothing
            assert "another report replaced it meanwhile" in " ".join(outputs[1].split())
