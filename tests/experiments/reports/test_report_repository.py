"""`xlstm-suite report` reads and writes the results of the checkout the working directory is in, not those of the
checkout the suite was installed from, and says which it uses where that is not obvious."""

import shutil

from experiments.cli import main
from experiments.paths import REPOSITORY_ROOT
from experiments.reports.repository import (
    repository_reports,
    repository_root,
    which_repository,
    working_checkout,
)

PYPROJECT = '[project]\nname = "xlstm-suite"\n'


def checkout(folder):
    """The least a folder needs to count as a checkout of the suite: its pyproject and the artifacts' folder."""
    (folder / "configs" / "paper").mkdir(parents=True)
    (folder / "pyproject.toml").write_text(PYPROJECT)
    return folder


def test_the_repository_is_the_checkout_holding_the_working_directory(tmp_path):
    other = checkout(tmp_path / "clone")
    (other / "deep" / "er").mkdir(parents=True)
    assert working_checkout(other / "deep" / "er") == repository_root(other / "deep" / "er") == other
    assert repository_reports(other) == other / "results" / "reports"
    assert "the working directory's checkout" in which_repository(other) and str(other) in which_repository(other)
    assert which_repository(REPOSITORY_ROOT / "experiments") is None  # the installed checkout: nothing to say
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "pyproject.toml").write_text('[project]\nname = "another"\n')
    assert working_checkout(tmp_path / "elsewhere") is None
    assert repository_root(tmp_path / "elsewhere") == REPOSITORY_ROOT
    assert "in no checkout of xlstm-suite" in which_repository(tmp_path / "elsewhere")


def test_report_in_another_checkout_writes_there_from_its_committed_rows(tmp_path, monkeypatch, capsys):
    other = checkout(tmp_path / "clone")
    committed = REPOSITORY_ROOT / "results" / "reports" / "mini"
    (other / "results" / "reports" / "mini").mkdir(parents=True)
    shutil.copy(committed / "lstmProblems.runs.csv", other / "results" / "reports" / "mini")
    monkeypatch.chdir(other)
    assert main(["report", "lstmProblems", "--scale", "mini"]) == 0
    assert f"results of {other} (the working directory's checkout)" in capsys.readouterr().err
    for suffix in (".md", ".csv", ".runs.csv"):
        name = f"lstmProblems{suffix}"
        assert (other / "results" / "reports" / "mini" / name).read_bytes() == (committed / name).read_bytes(), name
    assert (other / "results" / "reports" / "index.html").is_file()
    assert not (other / "results" / "runs").exists()  # read, never created
