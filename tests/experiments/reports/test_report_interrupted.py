"""A report is written as a whole or not at all: killed at any moment, the previous report stays whole and no
temporary file survives (SIGTERM cleans up at once; after SIGKILL, the next report does)."""

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from experiments.sweeps.sweep import run_sweep
from tests.sweep_fakes import RECORD_RUN, small_artifact

SUFFIXES = [".md", ".csv", ".runs.csv", ".png", ".pdf"]


def report_command(root: Path, destination: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "experiments.cli",
        "report",
        "sweep-fixture",
        "--scale",
        "smoke",
        "--root",
        str(root),
        "--destination",
        str(destination),
    ]


def report_files(destination: Path) -> dict[str, bytes]:
    return {suffix: (destination / "smoke" / f"sweep-fixture{suffix}").read_bytes() for suffix in SUFFIXES}


def leftovers(destination: Path) -> list[Path]:
    return [path for path in (destination / "smoke").iterdir() if path.name.startswith(".")]


@pytest.fixture(scope="module")
def two_reports(tmp_path_factory):
    """A store with 2 of the fixture's 6 runs done and its report (old), then all 6 done and their report (new)."""
    base = tmp_path_factory.mktemp("reports")
    root, old, new = base / "runs", base / "old", base / "new"
    assert (
        run_sweep(
            small_artifact(["xlstm_0_1"], tasks=["parity", "even_pairs"]),
            "smoke",
            jobs=1,
            root=root,
            run_function=RECORD_RUN,
        )
        == 0
    )
    subprocess.run(report_command(root, old), check=True, capture_output=True)
    assert run_sweep("sweep-fixture", "smoke", jobs=2, root=root, run_function=RECORD_RUN) == 0
    started = time.monotonic()
    subprocess.run(report_command(root, new), check=True, capture_output=True)
    return root, report_files(old), report_files(new), time.monotonic() - started


@pytest.mark.parametrize(  # of the time an uninterrupted report takes; one moment in the default suite
    "fraction",
    [
        pytest.param(0.5, marks=pytest.mark.slow),
        pytest.param(0.8, marks=pytest.mark.slow),
        0.9,
        pytest.param(1.0, marks=pytest.mark.slow),
    ],
)
def test_a_report_killed_at_any_moment_leaves_the_old_report_or_the_new_one_whole(two_reports, tmp_path, fraction):
    root, old, new, seconds = two_reports
    destination = tmp_path / "reports"
    (destination / "smoke").mkdir(parents=True)
    for suffix, content in old.items():
        (destination / "smoke" / f"sweep-fixture{suffix}").write_bytes(content)
    report = subprocess.Popen(report_command(root, destination), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(fraction * seconds)
    report.send_signal(signal.SIGKILL)
    report.wait()
    assert report_files(destination) in (old, new)
    subprocess.run(report_command(root, destination), check=True, capture_output=True)
    assert report_files(destination) == new and leftovers(destination) == []  # the next report removed the staging


def test_a_terminated_report_removes_its_staging_folder_at_once(two_reports, tmp_path):
    root, old, new, seconds = two_reports
    destination = tmp_path / "reports"
    report = subprocess.Popen(
        report_command(root, destination), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 2 * seconds
    while not ((destination / "smoke").exists() and leftovers(destination)) and report.poll() is None:
        assert time.monotonic() < deadline, "the report never staged its files"
        time.sleep(0.01)
    report.send_signal(signal.SIGTERM)
    report.wait()
    assert leftovers(destination) == [] and "Traceback" not in report.stderr.read()
