"""`list` and a sweep's planning read only a run's small files (result.json, cell.json, claim.json, error.json),
never its metrics.csv, whose length grows with the run's: their cost stays the same however long the runs were.
A metrics.csv changed after its run finished still makes the result damaged: result.json records its size."""

import io
import sys
from pathlib import Path

import pytest
from rich.console import Console

from experiments.sweeps.run_store import METRICS_FILE, finished_result
from experiments.sweeps.status import list_artifacts
from experiments.sweeps.sweep import run_sweep
from tests.experiments.sweeps.test_damaged_store import ARTIFACT, finished_store, warnings_naming

OPENED: list[str] | None = None  # the paths opened while a test records them


def record_opened(event: str, arguments: tuple) -> None:
    if event == "open" and OPENED is not None and isinstance(arguments[0], (str, bytes, Path)):
        OPENED.append(str(arguments[0]))


sys.addaudithook(record_opened)  # audit hooks stay for the process: this one records only inside opened_files


class opened_files:
    """The files opened inside the block (Python's "open" audit event: open(), Path.read_bytes, os.open, ...)."""

    def __enter__(self) -> list[str]:
        global OPENED
        OPENED = []
        return OPENED

    def __exit__(self, *exception) -> None:
        global OPENED
        OPENED = None


def test_list_and_planning_never_open_a_runs_metrics_csv(tmp_path):
    finished_store(tmp_path, ())
    with opened_files() as opened:
        Console(file=io.StringIO()).print(list_artifacts(tmp_path, ["sweep-fixture"], ["smoke"]))
        assert run_sweep(ARTIFACT, "smoke", root=tmp_path, console=Console(file=io.StringIO())) == 0  # all done
    assert [path for path in opened if path.endswith("result.json")]  # the hook saw the store being read
    assert [path for path in opened if path.endswith(METRICS_FILE)] == []


@pytest.mark.parametrize(
    "change", [b"", b"step,val/loss\n1,lost\n", b"\xff\xfe\x00garbage"], ids=["emptied", "rewritten", "binary"]
)
def test_a_metrics_csv_changed_after_its_run_finished_makes_the_result_damaged(tmp_path, capsys, change):
    damaged, intact = finished_store(tmp_path, ())
    recorded = (damaged / METRICS_FILE).stat().st_size
    (damaged / METRICS_FILE).write_bytes(change)
    assert finished_result(damaged) is None and finished_result(intact) is not None
    [warning] = warnings_naming(damaged / "result.json", capsys.readouterr().err)
    assert f"its {METRICS_FILE} has {len(change)} bytes, result.json recorded {recorded}" in warning
