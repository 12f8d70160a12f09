"""Two reports of the same artifact racing to the same folder: the one with fewer finished cells never replaces the
other's, whichever finishes first; it says so and exits 1. The check is made under a lock on the folder, at the
moment of replacement (not only before the figures are drawn)."""

import argparse
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from experiments.config.artifacts import load_artifact
from experiments.paths import REPOSITORY_ROOT
from experiments.reports import report
from experiments.reports.staging import locked
from experiments.sweeps.run_store import run_directory, write_result, write_run_inputs
from tests.sweep_fakes import record_run

RUNS = load_artifact("sweep-fixture").runs("smoke")  # 6 runs, one per cell


def store(root: Path, count: int) -> Path:
    """A run store with the first ``count`` of the fixture's runs finished (written here: no worker)."""
    for run in RUNS[:count]:
        run_dir = run_directory(run, root)
        write_run_inputs(run_dir, run)
        write_result(run_dir, run, record_run(run.config, run_dir), datetime.now(UTC))
    return root


def report_arguments(root: Path, destination: Path) -> list[str]:
    return ["sweep-fixture", "--scale", "smoke", "--root", str(root), "--destination", str(destination)]


def finished_cells(destination: Path) -> int:
    return int((pd.read_csv(destination / "smoke" / "sweep-fixture.csv")["runs"] > 0).sum())


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    base = tmp_path_factory.mktemp("stores")
    return store(base / "six", 6), store(base / "two", 2)


def test_a_report_with_fewer_cells_finishing_after_one_with_more_does_not_replace_it(
    stores, tmp_path, capsys, monkeypatch
):
    """The report of 2 cells finds no report to keep and draws its figure; the report of 6 cells is written before it
    writes its page (in between, as a concurrent one would); at the moment of replacement it keeps the 6 cells, says
    so and exits 1. (Figures are drawn but not saved: the race is the point.)"""
    six, two = stores
    destination = tmp_path / "reports"
    render = report.markdown
    monkeypatch.setattr(report, "save", lambda figure, stem: plt.close(figure))

    def another_report_finishes_first(*arguments, **keywords):
        monkeypatch.setattr(report, "markdown", render)
        assert report.write_report("sweep-fixture", "smoke", six, destination, planned=RUNS).status == "written"
        assert finished_cells(destination) == 6
        return render(*arguments, **keywords)

    monkeypatch.setattr(report, "markdown", another_report_finishes_first)
    arguments = argparse.Namespace(
        artifact="sweep-fixture", scale="smoke", root=two, destination=destination, overrides=[], force=False
    )
    assert report.report_command(arguments, {"sweep-fixture": RUNS}) == 1
    assert finished_cells(destination) == 6
    assert (
        f"skipped sweep-fixture (smoke): not written: another report replaced it meanwhile; kept "
        f"{destination / 'smoke' / 'sweep-fixture.md'}: it has 6 finished cells, this report would have 2 of 6; "
        "finish the missing runs, or pass --force to replace it"
    ) in " ".join(capsys.readouterr().out.split())
    assert [path.name for path in (destination / "smoke").iterdir() if path.name.startswith(".")] == []  # no staging


def test_the_lock_on_a_report_folder_excludes_other_processes_until_released(tmp_path):
    try_lock = (
        "import fcntl, os, sys\ndescriptor = os.open(sys.argv[1], os.O_RDONLY)\n"
        "try:\n    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)\nexcept BlockingIOError:\n"
        "    sys.exit(3)\n"
    )

    def other_process_locks() -> int:
        return subprocess.run([sys.executable, "-c", try_lock, str(tmp_path)]).returncode

    with locked(tmp_path):
        assert other_process_locks() == 3
    assert other_process_locks() == 0
    assert os.listdir(tmp_path) == []  # no lock file


@pytest.mark.slow  # three rounds of two report processes at once (about 10 s each)
def test_two_reports_started_together_leave_the_one_with_more_cells(stores, tmp_path):
    six, two = stores
    for round_ in range(3):
        destination = tmp_path / f"round-{round_}"
        reports = [
            subprocess.Popen(
                [sys.executable, "-m", "experiments.cli", "report", *report_arguments(root, destination)],
                cwd=REPOSITORY_ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for root in (six, two)
        ]
        outputs = [report.communicate(timeout=300)[0] for report in reports]
        assert reports[0].returncode == 0, outputs[0]
        assert finished_cells(destination) == 6
        if reports[1].returncode != 0:  # it finished last: it says why it wrote nothing
            assert "another report replaced it meanwhile" in " ".join(outputs[1].split())
