"""A result with a non-finite metric that does not say why (a diverged run, a run out of memory) is damaged: named,
moved aside, counted as damaged and rerun; a run function that returns one fails its run. A diverged run is done,
and `list` and the report page show it as diverged."""

import io
import json
import math

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from rich.console import Console

from experiments.config.artifacts import load_artifact
from experiments.reports.kinds import report_figure
from experiments.reports.report import cell_table, run_table
from experiments.reports.report_text import cells_markdown
from experiments.sweeps.run_execution import execute_run
from experiments.sweeps.run_store import (
    DIVERGED_AT_METRIC,
    DIVERGED_METRIC,
    ERROR_FILE,
    RESULT_FILE,
    finished_result,
    run_directory,
)
from experiments.sweeps.status import COLUMNS, list_artifacts
from tests.experiments.sweeps.test_damaged_store import ARTIFACT, finished_store, moved_aside, warnings_naming
from tests.experiments.sweeps.test_sweep import NO_TORCH
from tests.sweep_fakes import EXECUTIONS, NON_FINITE_RUN, RECORD_RUN, count_lines

NON_FINITE = {"nan": "NaN", "infinity": pytest.param("Infinity", marks=pytest.mark.slow)}  # as JSON spells them
FIXTURE = load_artifact("sweep-fixture").at_scale("smoke")
FIXTURE_RUNS = FIXTURE.runs("smoke")  # what list and report plan: 6 runs, the first two are ARTIFACT's


def set_metric(run_dir, name: str, json_value: str, **more: float) -> None:
    """Rewrite result.json with ``name`` set to a JSON literal (json.dumps writes NaN and Infinity so too)."""
    result = json.loads((run_dir / RESULT_FILE).read_text())
    result["metrics"] |= {name: 0.0} | more
    (run_dir / RESULT_FILE).write_text(json.dumps(result).replace(f'"{name}": 0.0', f'"{name}": {json_value}'))


def list_counts(root) -> dict[str, str]:
    console = Console(file=io.StringIO(), width=200)
    console.print(list_artifacts(root, ["sweep-fixture"], ["smoke"]))
    lines = console.file.getvalue().splitlines()
    header, row = [line.split() for line in lines if line.startswith(("artifact", "sweep-fixture"))]
    return dict.fromkeys(COLUMNS, "0") | dict(zip(header, row))  # a column of zeros is left out


@pytest.mark.parametrize("json_value", NON_FINITE.values(), ids=NON_FINITE.keys())
def test_a_result_with_a_non_finite_metric_not_marked_diverged_is_damaged_and_rerun(tmp_path, capsys, json_value):
    damaged, intact = finished_store(tmp_path, ())
    set_metric(damaged, "val/scaled_accuracy", json_value)
    damaged_bytes = (damaged / RESULT_FILE).read_bytes()
    assert finished_result(damaged) is None and finished_result(intact) is not None
    [warning] = warnings_naming(damaged / RESULT_FILE, capsys.readouterr().err)
    assert (
        f"metric 'val/scaled_accuracy' is {float(json_value)}, not finite, and the run is not marked diverged"
        in warning
    )
    assert [path.read_bytes() for path in moved_aside(damaged / RESULT_FILE)] == [damaged_bytes]
    counts = list_counts(tmp_path)
    assert (counts["done"], counts["damaged"]) == ("1", "1")
    assert [execute_run(run, tmp_path, RECORD_RUN).status for run in ARTIFACT.runs("smoke")] == ["done", "already done"]
    assert (count_lines(damaged / EXECUTIONS), count_lines(intact / EXECUTIONS)) == (2, 1)
    assert math.isfinite(finished_result(damaged)["metrics"]["val/scaled_accuracy"])


def report_table(root) -> pd.DataFrame:
    """The fixture report's cell table over the store (what `report` writes to its .csv)."""
    return cell_table(FIXTURE, run_table(FIXTURE_RUNS, root))


def test_a_report_counts_a_non_finite_result_as_missing_not_as_a_finished_cell(tmp_path):
    damaged, _ = finished_store(tmp_path, ())
    set_metric(damaged, "val/scaled_accuracy", "Infinity")
    table = report_table(tmp_path).set_index(["model", "task"])
    assert table.loc[("xlstm_0_1", "parity"), "runs"] == 0 and table.loc[("xlstm_1_0", "parity"), "runs"] == 1
    assert table.loc[("xlstm_0_1", "parity"), "note"] == "1 of 1 runs missing"


@pytest.mark.parametrize(
    "marks",
    [{f"trained/{DIVERGED_METRIC}": 1.0}, {"throughput/out_of_memory": 1.0}],
    ids=["an evaluation of diverged weights", "a run out of memory"],
)
def test_a_non_finite_metric_that_the_result_explains_is_done(tmp_path, capsys, marks):
    run_dir, _ = finished_store(tmp_path, ())
    set_metric(run_dir, "throughput/tokens_per_second", "NaN", **marks)
    assert math.isnan(finished_result(run_dir)["metrics"]["throughput/tokens_per_second"])
    assert capsys.readouterr().err == ""


def test_a_run_function_that_returns_a_non_finite_metric_without_diverging_fails_its_run(tmp_path):
    [run, _] = ARTIFACT.runs("smoke", [NO_TORCH])
    outcome = execute_run(run, tmp_path, NON_FINITE_RUN)
    run_dir = run_directory(run, tmp_path)
    assert outcome.status == "failed" and not (run_dir / RESULT_FILE).exists()
    error = json.loads((run_dir / ERROR_FILE).read_text())
    assert error["message"] == (
        "metric 'val/scaled_accuracy' is nan, not finite, and the run is not marked diverged "
        f"({DIVERGED_METRIC} 1); a run that did not diverge reports finite metrics"
    )


def test_a_diverged_run_is_done_and_shown_as_diverged_by_list_and_the_report(tmp_path, capsys):
    diverged, _ = finished_store(tmp_path, ())
    set_metric(diverged, "val/scaled_accuracy", "NaN", **{DIVERGED_METRIC: 1.0, DIVERGED_AT_METRIC: 7.0})
    set_metric(diverged, "test/scaled_accuracy", "NaN")
    assert finished_result(diverged) is not None and capsys.readouterr().err == ""
    counts = list_counts(tmp_path)
    assert (counts["done"], counts["diverged"], counts["damaged"]) == ("2", "1", "0")
    table = report_table(tmp_path)
    rows = [[cell.strip() for cell in line.split("|")] for line in cells_markdown(FIXTURE, table).splitlines()]
    [row] = [row for row in rows if row[1:3] == ["xLSTM[0:1]", "Parity"]]  # the page's cell table
    assert "1 of 1 runs diverged (non-finite training loss)" in row
    figure = report_figure(FIXTURE, table, "")
    labels = [text.get_text() for axes in figure.axes for text in axes.texts]
    assert labels.count("diverged") == 1 and labels.count("missing") == 4  # the heatmap's cells
    plt.close(figure)
