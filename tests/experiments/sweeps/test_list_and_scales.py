"""`list` tells the truth and artifacts declare their scales (issue 34): runs that committed per-run results hold
count as done, `--where` keeps part of the grids, and a scale an artifact does not declare is refused, never planned
as the paper's grid."""

import io
import subprocess
import sys

import pandas as pd
import pytest
from rich.console import Console

from experiments.cli import run_command as cli_main
from experiments.config.artifacts import load_artifact, named_artifacts
from experiments.config.configuration import ConfigError
from experiments.sweeps.run_execution import execute_run
from experiments.sweeps.status import committed_results_note, list_artifacts
from tests.conftest import FIXTURES
from tests.experiments.sweeps.test_run_store import listed
from tests.sweep_fakes import RECORD_RUN

FIXTURE = load_artifact("sweep-fixture")  # declares smoke, mini and paper


def printed(listing) -> tuple[list[str], list[list[str]]]:
    console = Console(file=io.StringIO(), width=120)
    console.print(listing)
    return listed(console)


def test_runs_of_committed_per_run_results_count_as_done(tmp_path):
    runs = FIXTURE.runs("smoke")
    execute_run(runs[0], tmp_path / "runs", RECORD_RUN)  # one in the store, committed too: counted once
    reports = tmp_path / "reports" / "smoke"
    reports.mkdir(parents=True)
    rows = [
        {"run_id": run.run_id, "status": status} for run, status in zip(runs[:4], ["done", "done", "done", "failed"])
    ]
    pd.DataFrame([*rows, {"run_id": "0123456789ab", "status": "done"}]).to_csv(reports / "sweep-fixture.runs.csv")
    pd.DataFrame([{"run_id": runs[5].run_id, "status": "done"}]).to_csv(reports / "sweep-fixture-a2c0987b.runs.csv")
    pd.DataFrame([{"run_id": runs[4].run_id, "status": "done"}]).to_csv(reports / "sweep-fixture-other.runs.csv")
    header, (row,) = printed(
        list_artifacts(tmp_path / "runs", ["sweep-fixture"], ["smoke"], reports=tmp_path / "reports")
    )
    counts = dict(zip(header, row))
    # store 1 + committed 2 (runs 1, 2) + an ablation's committed 1 (run 5); the failed row and the file of another
    # artifact (sweep-fixture-other) count nothing; the committed run of another config is "other"
    assert counts == {
        "artifact": "sweep-fixture",
        "scale": "smoke",
        "runs": "6",
        "done": "4",
        "committed": "3",
        "missing": "2",
        "other": "1",
    }


def test_the_committed_mini_reports_show_as_done_in_a_fresh_clone(tmp_path):
    header, (row,) = printed(list_artifacts(tmp_path, ["abl_matrixmemory"], ["mini"]))
    counts = dict(zip(header, row))
    assert counts["runs"] == counts["done"] == counts["committed"] != "0" and counts["missing"] == "0"


def test_a_fresh_clones_dry_run_and_status_name_the_committed_results_and_the_command_that_reports_them(tmp_path):
    runs = FIXTURE.runs("smoke")
    execute_run(runs[0], tmp_path / "runs", RECORD_RUN)  # in the store: not among the runs a sweep would train again
    reports = tmp_path / "reports" / "smoke"
    reports.mkdir(parents=True)
    committed = [{"run_id": run.run_id, "status": "done"} for run in runs[:3]]
    pd.DataFrame([*committed, {"run_id": runs[3].run_id, "status": "failed"}]).to_csv(
        reports / "sweep-fixture.runs.csv"
    )
    note = committed_results_note(
        "sweep-fixture", "smoke", runs, tmp_path / "runs", ["model.x=1"], tmp_path / "reports"
    )
    assert note.startswith("2 of these runs are not in the run store, but committed results hold them (")
    assert str(reports / "sweep-fixture.runs.csv") in note
    assert "`xlstm-suite report sweep-fixture --scale smoke model.x=1` makes the report from them" in note
    assert note.endswith("a sweep trains them again")
    assert (
        committed_results_note("sweep-fixture", "smoke", runs[3:], tmp_path / "runs", (), tmp_path / "reports") is None
    )


def test_the_committed_mini_reports_runs_are_named_by_the_dry_run_and_status_of_a_fresh_clone(tmp_path):
    for command in (["sweep", "--dry-run"], ["status"]):
        printed_lines = subprocess.run(
            [sys.executable, "-m", "experiments.cli", *command, "abl_matrixmemory", "--scale", "mini"]
            + ["--root", str(tmp_path)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        runs = len(load_artifact("abl_matrixmemory").runs("mini"))
        assert f"{runs} of these runs are not in the run store, but committed results hold them" in printed_lines
        assert "`xlstm-suite report abl_matrixmemory --scale mini` makes the report from them" in printed_lines


def test_where_keeps_the_matching_runs_and_names_a_filter_nothing_matches(tmp_path):
    _, rows = printed(list_artifacts(tmp_path, ["sweep-fixture"], ["smoke", "mini"], where={"task": ["parity"]}))
    kept = {scale: [run for run in FIXTURE.runs(scale) if run.cell["task"] == "parity"] for scale in ("smoke", "mini")}
    assert 0 < len(kept["smoke"]) < len(FIXTURE.runs("smoke"))
    assert [row[2] for row in rows] == [str(len(kept["smoke"])), str(len(kept["mini"]))]
    with pytest.raises(
        ValueError, match=r"no planned run of \['sweep-fixture'\] matches --where task=cycle_navigation"
    ):
        list_artifacts(tmp_path, ["sweep-fixture"], ["smoke"], where={"task": ["cycle_navigation"]})


def test_a_scale_the_artifact_does_not_declare_is_refused_and_not_listed(tmp_path, artifact_folder):
    fixture = (FIXTURES / "sweep-fixture.yaml").read_text()
    smoke_only = fixture.replace("artifact: sweep-fixture", "artifact: smoke-only")
    smoke_only = smoke_only[: smoke_only.index("  mini:")]  # the scales section's smoke block only
    (artifact_folder / "smoke-only.yaml").write_text(smoke_only)
    with pytest.raises(ConfigError, match=r"artifact 'smoke-only' has no 'paper' scale; its scales: \['smoke'\]"):
        load_artifact("smoke-only").runs("paper")
    _, rows = printed(list_artifacts(tmp_path, ["smoke-only"], ["smoke", "mini", "paper"]))
    assert [row[1] for row in rows] == ["smoke"]


def test_all_names_only_the_artifacts_that_declare_the_scale(artifact_folder):
    fixture = (FIXTURES / "sweep-fixture.yaml").read_text()
    smoke_only = fixture.replace("artifact: sweep-fixture", "artifact: smoke-only")
    (artifact_folder / "smoke-only.yaml").write_text(smoke_only[: smoke_only.index("  mini:")])
    assert "smoke-only" in named_artifacts("all", "smoke") and "sweep-fixture" in named_artifacts("all", "smoke")
    assert "smoke-only" not in named_artifacts("all", "mini") and "sweep-fixture" in named_artifacts("all", "mini")
    assert named_artifacts("smoke-only", "mini") == ["smoke-only"]  # named, it is refused later, with its scales


def test_sweep_at_a_scale_the_artifact_lacks_is_refused_with_its_scales(artifact_folder):
    fixture = (FIXTURES / "sweep-fixture.yaml").read_text()
    smoke_only = fixture.replace("artifact: sweep-fixture", "artifact: smoke-only")
    (artifact_folder / "smoke-only.yaml").write_text(smoke_only[: smoke_only.index("  mini:")])
    finished = subprocess.run(
        [sys.executable, "-m", "experiments.cli", "sweep", "smoke-only", "--scale", "mini", "--dry-run"],
        capture_output=True,
        text=True,
    )
    assert finished.returncode == 2
    assert "artifact 'smoke-only' has no 'mini' scale; its scales: ['smoke']" in finished.stderr
    assert "Traceback" not in finished.stderr


def test_report_where_reports_part_of_the_grid_under_a_name_of_its_own(tmp_path, capsys):
    runs = FIXTURE.runs("smoke")
    for run in runs:
        execute_run(run, tmp_path / "runs", RECORD_RUN)
    report = ["report", "sweep-fixture", "--scale", "smoke", "--root", str(tmp_path / "runs")]
    whole = [*report, "--destination", str(tmp_path / "reports")]
    assert cli_main(whole) == 0
    assert cli_main([*whole, "--where", "model=xlstm_0_1"]) == 0
    folder = tmp_path / "reports" / "smoke"
    [part] = [path for path in folder.glob("sweep-fixture-*.runs.csv")]  # beside the whole grid's, never over it
    assert set(pd.read_csv(part)["model"]) == {"xlstm_0_1"}
    assert set(pd.read_csv(folder / "sweep-fixture.runs.csv")["model"]) == {run.cell["model"] for run in runs}
    assert (
        "Part of the grid, runs of `--where model=xlstm_0_1`"
        in part.with_name(part.name.replace(".runs.csv", ".md")).read_text()
    )
    capsys.readouterr()
    assert cli_main([*whole, "--where", "modle=xlstm_0_1"]) == 2
    assert "'modle' is not a key of the artifact's cells; valid keys: ['model'" in capsys.readouterr().err
    assert cli_main(["report", "all", "--scale", "smoke", "--where", "model=xlstm_0_1"]) == 2
    assert "name the artifact instead of 'all'" in capsys.readouterr().err


def test_list_counts_per_scale_the_artifacts_with_a_report_page_and_names_the_few_without(tmp_path):
    reports = tmp_path / "reports"
    for scale, page in [
        ("mini", "sweep-fixture-a2c0987b.md"),
        ("mini", "abl_matrixmemory.md"),
        ("smoke", "sweep-fixture-other.md"),
        ("smoke", "sweep-fixture.runs.csv"),
    ]:
        (reports / scale).mkdir(parents=True, exist_ok=True)
        (reports / scale / page).write_text("run_id,status\n")  # a page's text is not read
    listing = list_artifacts(
        tmp_path / "runs", ["sweep-fixture", "abl_matrixmemory", "ablstudies"], ["smoke", "mini"], reports=reports
    )
    console = Console(file=io.StringIO(), width=300)
    console.print(listing)
    # an ablation's page counts, another artifact's page (sweep-fixture-other) and a .runs.csv do not
    assert (
        "report pages at smoke: 0 of 3 artifacts; at mini: 2 of 3 artifacts (none yet: ablstudies)"
        in console.file.getvalue()
    )
