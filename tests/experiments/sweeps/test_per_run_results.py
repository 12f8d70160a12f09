"""A report's committed per-run results are read with their run ids as text, and a file that is not one is a clear
error naming it (for `report` and `list`), never a pandas traceback."""

import pytest

from experiments.sweeps.per_run_results import read_per_run_results
from experiments.sweeps.status import list_artifacts


def test_a_run_id_of_twelve_digits_keeps_its_leading_zero(tmp_path):
    path = tmp_path / "x.runs.csv"
    path.write_text("model,run_id,status,error,val/loss\nllama,012345678901,done,,1.5\n")
    rows = read_per_run_results(path)
    assert rows["run_id"].tolist() == ["012345678901"] and rows["val/loss"].tolist() == [1.5]
    assert read_per_run_results(tmp_path / "absent.runs.csv") is None


@pytest.mark.parametrize(
    "text, problem", [("", "No columns to parse"), ("model,seed\nllama,0\n", "no column ['run_id', 'status']")]
)
def test_a_file_that_is_not_per_run_results_is_named_with_its_problem(tmp_path, text, problem):
    path = tmp_path / "x.runs.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match="is not a report's per-run results") as raised:
        read_per_run_results(path)
    assert str(path) in str(raised.value) and problem in str(raised.value) and "git checkout" in str(raised.value)


def test_list_names_an_empty_committed_file_instead_of_failing_in_pandas(tmp_path):
    (tmp_path / "reports" / "mini").mkdir(parents=True)
    (tmp_path / "reports" / "mini" / "abl_matrixmemory.runs.csv").write_text("")
    with pytest.raises(ValueError, match="abl_matrixmemory.runs.csv is not a report's per-run results"):
        list_artifacts(tmp_path / "runs", ["abl_matrixmemory"], ["mini"], reports=tmp_path / "reports")
