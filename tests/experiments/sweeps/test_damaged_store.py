"""A damaged run store never stops the suite: every kind of damage is named in one warning, moved aside with its
bytes intact, counted as not done by the readers behind list and report, and rerun by the next sweep."""

import io
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from rich.console import Console

from experiments.sweeps import run_store
from experiments.sweeps.claims import release
from experiments.sweeps.run_store import (
    CELL_FILE,
    CONFIG_FILE,
    DIVERGED_METRIC,
    ERROR_FILE,
    METRICS_FILE,
    RESULT_FILE,
    claim_run,
    finished_result,
    run_directory,
    runs_frame,
    store_frame,
    write_result,
    write_run_inputs,
)
from experiments.sweeps.status import list_artifacts
from experiments.sweeps.sweep import run_sweep
from tests.experiments.sweeps.test_sweep import NO_TORCH
from tests.sweep_fakes import EXECUTIONS, RECORD_RUN, count_lines, record_run, small_artifact

ARTIFACT = small_artifact(["xlstm_0_1", "xlstm_1_0"])  # the first two runs of the sweep-fixture's smoke grid


@dataclass(frozen=True)
class Damage:
    """What is done to the first run's directory, the file that is then damaged, and what its warning says."""

    inflict: Callable[[Path], None]
    file: str
    problem: str


def rewrite(name: str, content: bytes) -> Callable[[Path], None]:
    return lambda run_dir: (run_dir / name).write_bytes(content)


def truncate(name: str) -> Callable[[Path], None]:
    return lambda run_dir: (run_dir / name).write_bytes((run_dir / name).read_bytes()[:40])


def edit_result(edit: Callable[[dict], None]) -> Callable[[Path], None]:
    def inflict(run_dir: Path) -> None:
        result = json.loads((run_dir / RESULT_FILE).read_text())
        edit(result)
        (run_dir / RESULT_FILE).write_text(json.dumps(result))

    return inflict


def remove_config(run_dir: Path) -> None:
    (run_dir / CONFIG_FILE).unlink()


def fail_with_unreadable_error(run_dir: Path) -> None:
    (run_dir / RESULT_FILE).unlink()
    (run_dir / ERROR_FILE).write_bytes(b'{"exception_type": "Runt')


DAMAGES = {
    "truncated": Damage(truncate(RESULT_FILE), RESULT_FILE, "Unterminated string starting at: line 3 column 3 (char 32)"),
    "empty": Damage(rewrite(RESULT_FILE, b""), RESULT_FILE, "empty file"),
    "garbage": Damage(rewrite(RESULT_FILE, b"\x00\xffnot json"), RESULT_FILE, "Expecting value: line 1 column 1"),
    "a list": Damage(rewrite(RESULT_FILE, b"[1, 2]"), RESULT_FILE, "a JSON list, not an object"),
    "no metrics": Damage(edit_result(lambda result: result.pop("metrics")), RESULT_FILE, "metrics is None"),
    "text metric": Damage(
        edit_result(lambda result: result["metrics"].update({"val/scaled_accuracy": "high"})),
        RESULT_FILE, "metric 'val/scaled_accuracy' is 'high', not a number",
    ),
    "wrong run_id": Damage(
        edit_result(lambda result: result.update(run_id="0123456789ab")), RESULT_FILE, "run_id is '0123456789ab'"
    ),
    "no config.yaml": Damage(remove_config, RESULT_FILE, "config.yaml is missing"),
    "damaged cell.json": Damage(truncate(CELL_FILE), CELL_FILE, "Unterminated string"),
    "damaged error.json": Damage(fail_with_unreadable_error, ERROR_FILE, "Unterminated string"),
    "rewritten metrics.csv": Damage(
        rewrite(METRICS_FILE, b"\xff\xfe\x00garbage"), RESULT_FILE, "its metrics.csv has 10 bytes, result.json recorded 32"
    ),
    "removed metrics.csv": Damage(
        lambda run_dir: (run_dir / METRICS_FILE).unlink(), RESULT_FILE, "its metrics.csv is missing, result.json recorded 32"
    ),
}  # fmt: skip


def finished_store(root: Path, overrides: Sequence[str]) -> list[Path]:
    """What a sweep leaves of the artifact's finished runs (written here, with the fake run function: no worker)."""
    run_dirs = []
    for run in ARTIFACT.runs("smoke", overrides):
        run_dir = run_directory(run, root)
        write_run_inputs(run_dir, run)
        write_result(run_dir, run, record_run(run.config, run_dir), datetime.now(UTC))
        run_dirs.append(run_dir)
    return run_dirs


def damaged_store(root: Path, damage: Damage, overrides: Sequence[str] = ()) -> tuple[Path, Path, bytes]:
    """The damaged run's directory, the intact run's, and the damaged file's bytes."""
    damaged, intact = finished_store(root, overrides)
    damage.inflict(damaged)
    return damaged, intact, (damaged / damage.file).read_bytes()


def warnings_naming(path: Path, stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("warning: ") and str(path) in line]


def moved_aside(path: Path) -> list[Path]:
    return list(path.parent.glob(f"{path.name}.damaged-*"))


def statuses_in_runs_frame(root: Path, damaged: Path, intact: Path) -> dict[str, str]:
    frame = runs_frame(ARTIFACT.runs("smoke"), root)
    intact_row = frame[frame["run_id"] == intact.name].iloc[0]
    assert intact_row["val/scaled_accuracy"] == finished_result(intact)["metrics"]["val/scaled_accuracy"]
    return dict(zip(frame["run_id"], frame["status"]))


def statuses_in_store_frame(root: Path, damaged: Path, intact: Path) -> dict[str, str]:
    frame = store_frame(root, "smoke", "sweep-fixture")
    return dict(zip(frame["run_id"], frame["status"]))


def statuses_in_list(root: Path, damaged: Path, intact: Path) -> dict[str, str]:
    """The list command's counts of the fixture's 6 smoke runs, read back as the statuses they imply (one is done)."""
    failed = (damaged / ERROR_FILE).exists()  # a failed run with an unreadable error.json stays failed
    console = Console(file=io.StringIO(), width=200)
    console.print(list_artifacts(root, ["sweep-fixture"], ["smoke"]))
    lines = console.file.getvalue().splitlines()
    header, row = [line.split() for line in lines if line.startswith(("artifact", "sweep-fixture"))]
    counts = dict(zip(header, row))  # a column of zeros is left out
    expected = {"runs": "6", "done": "1", "failed": str(int(failed)), "damaged": str(int(not failed)), "missing": "5"}
    assert {name: counts.get(name, "0") for name in expected} == expected
    named = [line for line in lines if line.startswith("damaged: ")]  # a line names the damaged run's moved file
    assert failed or (len(named) == 1 and str(damaged) in named[0] and ".damaged-" in named[0])
    return {intact.name: "done", damaged.name: "not done"}


READERS = [statuses_in_runs_frame, statuses_in_store_frame, statuses_in_list]


@pytest.mark.parametrize("reader", READERS, ids=lambda reader: reader.__name__)
@pytest.mark.parametrize("damage", DAMAGES.values(), ids=DAMAGES.keys())
def test_readers_go_on_name_the_damaged_file_once_and_move_it_aside(tmp_path, capsys, damage, reader):
    damaged, intact, damaged_bytes = damaged_store(tmp_path, damage)
    statuses = reader(tmp_path, damaged, intact)
    assert statuses[intact.name] == "done"
    assert statuses.get(damaged.name, "absent") != "done"
    [warning] = warnings_naming(damaged / damage.file, capsys.readouterr().err)
    assert damage.problem in warning and "treated as not done" in warning
    [moved] = moved_aside(damaged / damage.file)
    assert f"moved to {moved.name}" in warning
    assert moved.read_bytes() == damaged_bytes
    assert not (damaged / damage.file).exists()
    assert finished_result(intact) is not None and moved_aside(intact / RESULT_FILE) == []


@pytest.mark.parametrize("damage", DAMAGES.values(), ids=DAMAGES.keys())
def test_a_dry_run_goes_on_and_counts_only_the_intact_run_done(tmp_path, damage):
    damaged_store(tmp_path, damage)
    console = Console(file=io.StringIO(), width=250)
    assert run_sweep(ARTIFACT, "smoke", dry_run=True, root=tmp_path, console=console) == 0
    assert "2 runs: done 1," in console.file.getvalue()


@pytest.mark.parametrize("damage", DAMAGES.values(), ids=DAMAGES.keys())
def test_a_sweep_reruns_the_damaged_run_and_only_it(tmp_path, damage):
    damaged, intact, damaged_bytes = damaged_store(tmp_path, damage, [NO_TORCH])
    console = Console(file=io.StringIO(), width=250)
    assert (
        run_sweep(
            ARTIFACT, "smoke", jobs=1, overrides=[NO_TORCH], root=tmp_path, run_function=RECORD_RUN, console=console
        )
        == 0
    )
    assert "done now: 1" in console.file.getvalue()
    assert (count_lines(damaged / EXECUTIONS), count_lines(intact / EXECUTIONS)) == (2, 1)
    assert finished_result(damaged) is not None
    if damage.file != ERROR_FILE:  # a rerun that succeeds removes the error.json of an earlier attempt, as always
        assert [path.read_bytes() for path in moved_aside(damaged / damage.file)] == [damaged_bytes]


def test_a_damaged_error_json_reads_as_a_failure_that_names_it_unreadable(tmp_path):
    damaged, _, _ = damaged_store(tmp_path, DAMAGES["damaged error.json"])
    frame = runs_frame(ARTIFACT.runs("smoke"), tmp_path)
    row = frame[frame["run_id"] == damaged.name].iloc[0]
    assert row["status"] == "failed"
    assert row["error"].startswith("unreadable error.json (Unterminated string")


def test_a_damaged_result_does_not_block_claiming_the_run(tmp_path):
    damaged, intact, _ = damaged_store(tmp_path, DAMAGES["truncated"])
    claim = claim_run(damaged)
    assert claim is not None
    release(claim)
    assert claim_run(intact) is None


def test_a_damaged_file_that_cannot_be_moved_is_named_once_and_its_run_is_not_done(tmp_path, capsys, monkeypatch):
    damaged, _, damaged_bytes = damaged_store(tmp_path, DAMAGES["truncated"])

    def read_only_store(source, destination):
        raise PermissionError(13, "Permission denied", str(source))

    monkeypatch.setattr(run_store.os, "rename", read_only_store)
    for _ in range(3):  # as list and report do, looking at the same run several times
        assert list(runs_frame(ARTIFACT.runs("smoke"), tmp_path)["status"]) == ["missing", "done"]
    [warning] = warnings_naming(damaged / RESULT_FILE, capsys.readouterr().err)
    assert "could not move it aside" in warning and "Permission denied" in warning and "treated as not done" in warning
    assert (damaged / RESULT_FILE).read_bytes() == damaged_bytes and moved_aside(damaged / RESULT_FILE) == []


def test_a_damaged_file_another_process_moves_first_is_simply_gone(tmp_path, capsys, monkeypatch):
    damaged, _, damaged_bytes = damaged_store(tmp_path, DAMAGES["truncated"])
    taken_by_the_other_process = damaged / f"{RESULT_FILE}.damaged-by-the-other-process"
    real_rename = os.rename

    def the_other_process_renames_first(source, destination):
        real_rename(source, taken_by_the_other_process)
        real_rename(source, destination)

    monkeypatch.setattr(run_store.os, "rename", the_other_process_renames_first)
    assert finished_result(damaged) is None
    assert warnings_naming(damaged / RESULT_FILE, capsys.readouterr().err) == []  # the other process warns
    assert moved_aside(damaged / RESULT_FILE) == [taken_by_the_other_process]
    assert taken_by_the_other_process.read_bytes() == damaged_bytes


def test_a_sound_result_written_while_the_damaged_one_is_moved_is_put_back(tmp_path, capsys, monkeypatch):
    damaged, intact, _ = damaged_store(tmp_path, DAMAGES["truncated"])
    sound_result = (intact / RESULT_FILE).read_text().replace(intact.name, damaged.name)
    real_rename = os.rename

    def a_rerun_finishes_first(source, destination):
        Path(source).write_text(sound_result)
        real_rename(source, destination)

    monkeypatch.setattr(run_store.os, "rename", a_rerun_finishes_first)
    assert finished_result(damaged) is None  # this look read the damaged file
    monkeypatch.undo()
    assert (damaged / RESULT_FILE).read_text() == sound_result and moved_aside(damaged / RESULT_FILE) == []
    assert finished_result(damaged)["run_id"] == damaged.name
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("value", [float("nan"), 3], ids=["nan (a diverged run)", "an integer"])
def test_a_result_with_any_number_as_metric_is_done(tmp_path, capsys, value):
    run_dir, _ = finished_store(tmp_path, ())
    edit_result(lambda result: result["metrics"].update({"loss": value, DIVERGED_METRIC: 1}))(run_dir)
    assert finished_result(run_dir)["metrics"]["loss"] == pytest.approx(value, nan_ok=True)
    assert capsys.readouterr().err == ""
