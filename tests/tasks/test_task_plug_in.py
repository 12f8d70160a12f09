"""A task family plugged in from outside tasks/ (tests/toy_task.py, its configs and artifact under
tests/fixtures/toy_family/) runs through ``sweep`` and ``report`` with no line in experiments/ or tasks/registry.py:
XLSTM_SUITE_TASK_FAMILIES names the family, XLSTM_SUITE_CONFIGS lets Hydra find its task config, and
XLSTM_SUITE_ARTIFACTS its artifact; the sweep's worker processes inherit all three."""

import os

import pandas as pd
import pytest

from experiments.cli import main as cli_main
from experiments.config.artifacts import EXTRA_ARTIFACTS_VARIABLE
from experiments.config.configuration import EXTRA_CONFIGS_VARIABLE
from tasks.registry import PLUG_INS_VARIABLE, task_families
from tests.conftest import FIXTURES

TOY = FIXTURES / "toy_family"


@pytest.fixture
def toy_family(monkeypatch):
    monkeypatch.setenv(PLUG_INS_VARIABLE, "tests.toy_task:TASK_FAMILIES")
    monkeypatch.setenv(EXTRA_CONFIGS_VARIABLE, str(TOY / "configs"))
    monkeypatch.setenv(
        EXTRA_ARTIFACTS_VARIABLE, os.pathsep.join([os.environ[EXTRA_ARTIFACTS_VARIABLE], str(TOY / "artifacts")])
    )


@pytest.mark.slow  # minutes of the default suite's 10 (make test-slow)
def test_a_plugged_in_family_runs_through_sweep_and_report(toy_family, tmp_path, capsys):
    runs, reports = tmp_path / "runs", tmp_path / "reports"
    assert cli_main(["sweep", "toy-previous-token", "--scale", "smoke", "--root", str(runs)]) == 0
    assert len(list(runs.glob("smoke/toy-previous-token/*/result.json"))) == 1
    assert (
        cli_main(
            ["report", "toy-previous-token", "--scale", "smoke", "--root", str(runs), "--destination", str(reports)]
        )
        == 0
    )
    stem = reports / "smoke" / "toy-previous-token"
    table = pd.read_csv(stem.with_suffix(".csv"))
    assert table[["model", "task", "runs"]].values.tolist() == [["lstm", "previous_token", 1]]
    assert table["ours"].notna().all()
    per_run = pd.read_csv(stem.with_suffix(".runs.csv"))
    assert per_run["task"].tolist() == ["previous_token"] and per_run["status"].tolist() == ["done"]
    assert "| LSTM    | Previous token |" in stem.with_suffix(".md").read_text()
    assert stem.with_suffix(".png").exists()  # the heatmap: its column group is the toy spec's, through the registry


@pytest.mark.parametrize(
    "entry, message",
    [
        ("tests.toy_task", "is not module:attribute"),
        ("tests.no_such_module:TASK_FAMILIES", "cannot import 'tests.no_such_module'"),
        ("tests.toy_task:FAMILIES", "module 'tests.toy_task' has no 'FAMILIES'"),
        (
            "tests.toy_task:PreviousTokenConfig",
            "PreviousTokenConfig must be a non-empty mapping of family name -> TaskFamily",
        ),
        ("tasks.registry:TASK_FAMILIES", "task family 'formal_language' is registered already"),
    ],
)
def test_a_bad_plug_in_entry_is_named(monkeypatch, entry, message):
    monkeypatch.setenv(PLUG_INS_VARIABLE, f"tests.toy_task:TASK_FAMILIES,{entry}")
    with pytest.raises(ValueError, match=f"{PLUG_INS_VARIABLE} entry '{entry}'.*{message}"):
        task_families()


def test_a_bad_plug_in_entry_stops_a_sweep_before_anything_runs(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv(PLUG_INS_VARIABLE, "tests.toy_task")
    assert cli_main(["sweep", "sweep-fixture", "--scale", "smoke", "--root", str(tmp_path)]) == 2
    assert f"{PLUG_INS_VARIABLE} entry 'tests.toy_task' is not module:attribute" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())
