"""Every committed report regenerates from a clone: the run store is not committed, the per-run results beside each
report are, and `xlstm-suite report` reads them for runs the store lacks."""

import sys

import pytest

from experiments.config.artifacts import SCALES
from tests.repository_copy import REPOSITORY_ROOT, copy_repository, run_in

REPORTS = REPOSITORY_ROOT / "results" / "reports"
SCALE_FOLDERS = [REPORTS / scale for scale in SCALES]  # results/reports/<scale>/; other folders hold benchmarks' output
COMMITTED = sorted(path for folder in SCALE_FOLDERS for path in folder.glob("*.runs.csv"))


def scale_and_artifact(runs_csv):
    return runs_csv.parent.name, runs_csv.name.removesuffix(".runs.csv")


def test_committed_reports_carry_their_per_run_results():
    for page in (page for folder in SCALE_FOLDERS for page in folder.glob("*.md")):
        assert (page.parent / f"{page.stem}.runs.csv").exists(), f"{page} has no per-run results beside it"


@pytest.mark.parametrize("runs_csv", COMMITTED, ids=["/".join(scale_and_artifact(path)) for path in COMMITTED])
def test_a_committed_report_regenerates_exactly_in_a_clone(runs_csv, tmp_path):
    scale, artifact = scale_and_artifact(runs_csv)
    copy = copy_repository(tmp_path)
    assert not (copy / "results" / "runs").exists()
    finished = run_in(copy, f"{sys.executable} -m experiments.cli report {artifact} --scale {scale}")
    assert finished.returncode == 0, finished.output
    for suffix in (".md", ".csv", ".runs.csv"):
        name = f"{artifact}{suffix}"
        assert (copy / "results" / "reports" / scale / name).read_bytes() == (runs_csv.parent / name).read_bytes(), name
