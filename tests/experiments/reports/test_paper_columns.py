"""A table report's further paper columns (``report.paper_columns``): per cell, our mean of each mapped metric over
the chosen runs beside the paper's number of that column, on the page and in the cell table; a column the paper's
table does not have is refused, naming the valid ones, before anything is read or written."""

import pandas as pd
import pytest

from experiments.cli import main as cli_main
from experiments.config.artifacts import SCALES, load_artifact
from experiments.reports.committed_runs import committed_path
from experiments.reports.paper_columns import number_columns, paper_columns_of, paper_columns_problems
from experiments.reports.paper_numbers import paper_numbers_of
from experiments.reports.paper_tables import paper_table
from experiments.reports.report import write_report

FIXTURE = "paper-columns-fixture"
PAPER_COLUMNS = "{c4: paloma/c4, dolma_coding: paloma/dolma_coding, average: paloma/average}"


@pytest.fixture
def artifact_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("XLSTM_SUITE_ARTIFACTS", str(tmp_path))
    return tmp_path


def paper_columns_artifact(folder, paper_columns: str = PAPER_COLUMNS) -> None:
    """Two models of the paper's 125M size, two seeds each, reported against Table ppleval."""
    (folder / f"{FIXTURE}.yaml").write_text(f"""
artifact: {FIXTURE}
grid:
  model: [llama, xlstm_1_0]
  model.size: [125m]
  seed: [0, 1]
overrides: [task=lm_sample]
selection: {{metric: paloma/average, mode: min, choose: [], average: [seed]}}
report: {{kind: table, cells: [model, model.size], metric: paloma/average, paper_columns: {paper_columns}}}
paper: {{numbers: {{table: ppleval, column: average}}}}
scales: {{smoke: {{}}}}
""")


def committed_runs(reports, metrics: dict) -> None:
    """The fixture's runs as a report's committed rows (a run store of finished runs): model -> metric -> values by
    seed."""
    rows = [
        {
            **run.cell,
            "run_id": run.run_id,
            "status": "done",
            "error": None,
            **{metric: values[run.cell["seed"]] for metric, values in metrics[run.cell["model"]].items()},
        }
        for run in load_artifact(FIXTURE).runs("smoke")
    ]
    path = committed_path(reports / "smoke" / FIXTURE)
    path.parent.mkdir(parents=True)
    pd.DataFrame(rows).to_csv(path, index=False)


def test_each_paper_column_shows_our_mean_over_the_chosen_runs_beside_the_papers_number(artifact_folder):
    paper_columns_artifact(artifact_folder)
    reports = artifact_folder / "reports"
    committed_runs(
        reports,
        {
            "llama": {"paloma/c4": [20.0, 22.0], "paloma/dolma_coding": [3.0, 4.0], "paloma/average": [18.0, 19.0]},
            "xlstm_1_0": {"paloma/c4": [30.0, 31.0], "paloma/dolma_coding": [5.0, 5.5], "paloma/average": [25.0, 26.0]},
        },
    )
    assert write_report(FIXTURE, "smoke", artifact_folder / "runs", reports).status == "written"

    printed = paper_table("ppleval").set_index(["model", "size"])
    table = pd.read_csv(reports / "smoke" / f"{FIXTURE}.csv").set_index("model")
    assert list(table.columns[-6:]) == [
        "c4 ours",
        "c4 paper",
        "dolma_coding ours",
        "dolma_coding paper",
        "average ours",
        "average paper",
    ]
    assert table.loc["llama", "c4 ours"] == 21.0 and table.loc["xlstm_1_0", "dolma_coding ours"] == 5.25
    for model in ("llama", "xlstm_1_0"):
        for column in ("c4", "dolma_coding", "average"):
            assert table.loc[model, f"{column} paper"] == printed.loc[(model, "125m"), column]
    assert (table["average ours"] == table["ours"]).all()  # the primary metric's mean, as its own column says

    page = (reports / "smoke" / f"{FIXTURE}.md").read_text()
    section = page.split("## The paper's columns and ours")[1].split("## Cells")[0]
    assert "c4 is paloma/c4, dolma_coding is paloma/dolma_coding, average is paloma/average" in section
    header, _, *rows = markdown_rows(section)
    assert header == [
        "model",
        "model.size",
        "c4 ours",
        "c4 paper",
        "dolma_coding ours",
        "dolma_coding paper",
        "average ours",
        "average paper",
    ]
    llama, xlstm = printed.loc[("llama", "125m")], printed.loc[("xlstm_1_0", "125m")]
    assert [[float(value) for value in row[2:]] for row in rows] == [
        [21.0, llama["c4"], 3.5, llama["dolma_coding"], 18.5, llama["average"]],
        [30.5, xlstm["c4"], 5.25, xlstm["dolma_coding"], 25.5, xlstm["average"]],
    ]
    assert [row[:2] for row in rows] == [["Llama", "125m"], ["xLSTM[1:0]", "125m"]]


def markdown_rows(text: str) -> list[list[str]]:
    """The cells of each row of the markdown table in ``text``."""
    return [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in text.splitlines()
        if line.startswith("|")
    ]


def test_a_column_the_papers_table_lacks_is_named_with_the_valid_ones_before_anything_is_written(
    artifact_folder, capsys
):
    paper_columns_artifact(artifact_folder, "{c4: paloma/c4, c5: paloma/c5}")
    assert (
        cli_main(
            [
                "report",
                FIXTURE,
                "--scale",
                "smoke",
                "--root",
                str(artifact_folder / "runs"),
                "--destination",
                str(artifact_folder / "reports"),
            ]
        )
        == 2
    )
    error = capsys.readouterr().err
    assert (
        "report.paper_columns: 'c5' is not a column of the paper's table ppleval; valid choices: ['params_m', "
        "'c4', 'mc4_en'"
    ) in error and "'average']" in error
    assert "'c4' is not" not in error and not (artifact_folder / "reports").exists()


def test_a_metric_no_finished_run_records_is_named(artifact_folder):
    paper_columns_artifact(artifact_folder, "{c4: paloma/c4, average: paloma/average}")
    reports = artifact_folder / "reports"
    committed_runs(reports, {model: {"paloma/average": [18.0, 19.0]} for model in ("llama", "xlstm_1_0")})
    with pytest.raises(
        ValueError,
        match=r"report.paper_columns: no finished run of paper-columns-fixture records "
        r"\['paloma/c4'\]; they record \['model/parameters', 'paloma/average'\]",
    ):
        write_report(FIXTURE, "smoke", artifact_folder / "runs", reports)


@pytest.mark.parametrize("name", ["ppleval", "ppleval_app", "lmeval"])
def test_the_evaluation_tables_show_every_column_of_the_papers_at_paper_scale(name):
    artifact = load_artifact(name)
    numbers = paper_numbers_of(artifact.paper)
    assert list(paper_columns_of(artifact.at_scale("paper").layout)) == [
        column for column in number_columns(numbers.table) if column != "params_m"
    ]  # the count is another report's
    for scale in SCALES:
        assert paper_columns_problems(artifact.at_scale(scale).layout, numbers) == []
