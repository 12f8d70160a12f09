"""Every committed report regenerates from its committed results, as in a clone: the run store is not committed, the
per-run results beside each report are, and `xlstm-suite report` reads them for runs the store lacks."""

import re
import shlex

import pytest

from experiments.cli import main
from experiments.config.artifacts import SCALES, known_artifacts
from experiments.reports.report import report_stem
from tests.repository_copy import REPOSITORY_ROOT

REPORTS = REPOSITORY_ROOT / "results" / "reports"
SCALE_FOLDERS = [REPORTS / scale for scale in SCALES]  # results/reports/<scale>/; other folders hold benchmarks' output
COMMITTED = sorted(path for folder in SCALE_FOLDERS for path in folder.glob("*.runs.csv"))


def scale_and_artifact(runs_csv):
    return runs_csv.parent.name, runs_csv.name.removesuffix(".runs.csv")


def report_arguments(runs_csv) -> str:
    """The artifact and overrides that wrote the report: an ablation's page (``<artifact>-<hash>``) names its
    overrides, and the hash must be theirs."""
    stem = runs_csv.name.removesuffix(".runs.csv")
    if stem in known_artifacts():
        return stem
    artifact = stem.rsplit("-", 1)[0]
    quoted = re.search(
        r"^Runs with the overrides `([^`]*)`\.$", (runs_csv.parent / f"{stem}.md").read_text(), re.MULTILINE
    )
    assert quoted, f"{stem}.md names no overrides"
    overrides = quoted.group(1).split(" ")
    assert report_stem(artifact, overrides) == stem
    return " ".join([artifact, *(shlex.quote(override) for override in overrides)])


def test_committed_reports_carry_their_per_run_results():
    for page in (page for folder in SCALE_FOLDERS for page in folder.glob("*.md")):
        assert (page.parent / f"{page.stem}.runs.csv").exists(), f"{page} has no per-run results beside it"


@pytest.mark.parametrize("runs_csv", COMMITTED, ids=["/".join(scale_and_artifact(path)) for path in COMMITTED])
def test_a_committed_report_regenerates_exactly_from_its_committed_results(runs_csv, tmp_path):
    """As in a clone: an empty run store and an empty destination (the report finds the per-run results the
    repository commits, in the working directory's checkout); in this process, to spare each report a process
    start."""
    scale, artifact = scale_and_artifact(runs_csv)
    destination = tmp_path / "reports"
    arguments = shlex.split(report_arguments(runs_csv))
    assert (
        main(
            [
                "report",
                *arguments,
                "--scale",
                scale,
                "--root",
                str(tmp_path / "runs"),
                "--destination",
                str(destination),
            ]
        )
        == 0
    )
    assert not (tmp_path / "runs").exists()
    for suffix in (".md", ".csv", ".runs.csv"):
        name = f"{artifact}{suffix}"
        assert (destination / scale / name).read_bytes() == (runs_csv.parent / name).read_bytes(), name
