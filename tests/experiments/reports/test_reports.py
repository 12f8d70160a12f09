"""Reports never destroy results, regenerate from committed per-run rows, and say what they show: the scale's
settings, the metric's whole range, the paper's names, and the paper's finding beside ours."""

import dataclasses
import shutil

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from experiments.cli import main as cli_main
from experiments.config.artifacts import (
    artifact_files,
    artifact_from_yaml,
    load_artifact,
)
from experiments.config.titles import title_of
from experiments.display import SCALE_NOTES
from experiments.reports.committed_runs import committed_path, with_committed
from experiments.reports.finding_checks import CheckContext, check, checked_markdown
from experiments.reports.findings import findings_of
from experiments.reports.kinds import report_figure
from experiments.reports.page_summary import seeds_description
from experiments.reports.report import cell_table, write_report
from experiments.reports.report_text import cells_markdown, figure_title, markdown
from experiments.sweeps.sweep import run_sweep
from tests.sweep_fakes import RECORD_RUN, small_artifact

FIXTURE = "sweep-fixture"
NO_TORCH = ["trainer.num_threads=null"]


def sweep(root, models=("xlstm_0_1", "xlstm_1_0", "xlstm_1_1"), tasks=("parity", "even_pairs")):
    assert (
        run_sweep(
            small_artifact(models, tasks), "smoke", jobs=1, overrides=NO_TORCH, root=root, run_function=RECORD_RUN
        )
        == 0
    )


def report(root, destination, force=False):
    return write_report(FIXTURE, "smoke", root, destination, extra_overrides=NO_TORCH, force=force)


def files(folder):
    return {path.name: path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def test_an_artifact_without_finished_runs_writes_nothing(tmp_path):
    outcome = report(tmp_path / "runs", tmp_path / "reports")
    assert outcome.status == "empty"
    assert "no finished runs of its 6 planned runs; nothing written" in outcome.message
    assert not (tmp_path / "reports").exists()


@pytest.mark.slow  # 34 s (plans every artifact twice); README's `report all` runs its written path by default
def test_report_all_skips_empty_artifacts_and_fails_only_when_it_wrote_nothing(tmp_path, capsys):
    arguments = [
        "report",
        "all",
        "--scale",
        "smoke",
        "--root",
        str(tmp_path / "runs"),
        "--destination",
        str(tmp_path / "reports"),
        *NO_TORCH,
    ]
    assert cli_main(arguments) == 1
    skipped = [line for line in capsys.readouterr().out.splitlines() if line.startswith("skipped")]
    assert len(skipped) >= 3 and all("nothing written" in line for line in skipped)
    sweep(tmp_path / "runs")
    assert cli_main(arguments) == 0
    output = capsys.readouterr().out
    assert "sweep-fixture (smoke): 6 of 6 cells finished" in output
    assert "skipped formal-main (smoke): no finished runs" in output
    assert {path.parent.name for path in (tmp_path / "reports").rglob("*.md")} == {"smoke"}


def test_a_report_with_fewer_finished_cells_keeps_the_existing_one_unless_forced(tmp_path):
    sweep(tmp_path / "runs")
    written = report(tmp_path / "runs", tmp_path / "reports")
    assert written.status == "written"
    before = files(tmp_path / "reports")
    stem = written.paths[0].with_suffix("")
    committed_path(stem).unlink()  # without the committed rows, a smaller store gives fewer cells
    sweep(tmp_path / "fewer", models=("xlstm_0_1",))
    kept = report(tmp_path / "fewer", tmp_path / "reports")
    assert kept.status == "kept"
    assert "it has 6 finished cells, this report would have 2 of 6" in kept.message and "--force" in kept.message
    assert {name: data for name, data in files(tmp_path / "reports").items() if not name.endswith(".runs.csv")} == {
        name: data for name, data in before.items() if not name.endswith(".runs.csv")
    }
    forced = report(tmp_path / "fewer", tmp_path / "reports", force=True)
    assert forced.status == "written"
    assert pd.read_csv(stem.with_suffix(".csv"))["ours"].notna().sum() == 2


def test_committed_per_run_rows_regenerate_the_report_without_the_store(tmp_path):
    sweep(tmp_path / "runs")
    first = report(tmp_path / "runs", tmp_path / "reports")
    rows = pd.read_csv(committed_path(first.paths[0].with_suffix("")))
    assert len(rows) == 6 and set(rows["status"]) == {"done"}
    assert {"model", "task", "optim.lr", "seed", "run_id", "val/scaled_accuracy", "test/scaled_accuracy"} <= set(rows)
    before = files(tmp_path / "reports")
    shutil.rmtree(tmp_path / "runs")
    again = report(tmp_path / "runs", tmp_path / "reports")
    assert again.status == "written"
    assert files(tmp_path / "reports") == before  # page, tables, per-run rows and figures, byte for byte


def test_committed_rows_of_other_configs_stand_in_for_nothing(tmp_path):
    sweep(tmp_path / "runs")
    stem = report(tmp_path / "runs", tmp_path / "reports").paths[0].with_suffix("")
    rows = pd.read_csv(committed_path(stem))
    rows["run_id"] = "0123456789ab"  # runs of a changed config
    rows.to_csv(committed_path(stem), index=False)
    assert report(tmp_path / "empty", tmp_path / "reports").status == "empty"


def frame(statuses, **metrics):
    rows = pd.DataFrame(
        {
            "model": ["a"] * len(statuses),
            "run_id": [f"id{index}" for index in range(len(statuses))],
            "status": statuses,
            "error": [None] * len(statuses),
        }
    )
    for name, values in metrics.items():
        rows[name] = values
    return rows


def test_a_committed_result_fills_in_only_runs_the_store_has_not_finished():
    store = frame(["done", "failed", "missing", "missing", "failed"], **{"val/score": [1.0, None, None, None, None]})
    store.loc[[1, 4], "error"] = "RuntimeError: store"
    committed = frame(["done", "done", "done", "failed", "failed"], **{"val/score": [9.0, 2.0, 3.0, None, None]})
    committed.loc[3, "error"] = committed.loc[4, "error"] = "RuntimeError: committed"
    merged = with_committed(store, committed, ["model"])
    assert list(merged["status"]) == ["done", "done", "done", "failed", "failed"]
    assert list(merged["val/score"][:3]) == [1.0, 2.0, 3.0]  # the store's own result wins
    assert list(merged["source"]) == ["store", "committed", "committed", "committed", "store"]
    assert merged.loc[4, "error"] == "RuntimeError: store"  # a committed failure never hides the store's


def test_a_committed_column_of_a_cell_key_the_grid_no_longer_has_is_ignored():
    """A report's rows committed before its grid lost a key (here ``task``, a text column) still fill in its runs."""
    store = frame(["missing"], **{"val/score": [None]})
    committed = frame(["done"], **{"val/score": [2.5]}).assign(task="lm_sample")
    merged = with_committed(store, committed, ["model"])
    assert merged.loc[0, "val/score"] == 2.5 and merged.loc[0, "source"] == "committed"
    assert "task" not in merged.columns


def parity_table(values):
    """A cell table of the parity column: model -> its runs' values (empty: no finished run)."""
    return pd.DataFrame({"model": list(values), "task": "parity", "values": [tuple(runs) for runs in values.values()]})


def judged(finding, table, metric="test/scaled_accuracy", **context):
    """model -> (ours, the runs counted, agrees) of a run-by-run finding's check."""
    checked = check(finding, table, CheckContext(cells=["model", "task"], metric=metric, mode="max", **context))
    return checked, {row[0]: (row[2], row[3], agrees) for row, agrees in zip(checked.rows, checked.agrees)}


def test_a_finding_is_checked_model_by_model_and_run_by_run():
    (finding,) = findings_of(load_artifact("formal-main").paper)
    _, rows = judged(
        finding,
        parity_table(
            {
                "lstm": [1.0, 0.95, 0.9],
                "xlstm_0_1": [0.3, 0.95, 1.0],
                "xlstm_1_1": [0.2],
                "llama": [0.01, 0.02, 0.5],
                "xlstm_1_0": [0.97, 0.89],
                "retnet": [0.91, 0.93],
                "lstm_block": [],
            }
        ),
    )
    assert rows["LSTM"] == ("solved", "3 of 3", "yes")
    assert rows["xLSTM[0:1]"] == ("mixed", "2 of 3", "partly")
    assert rows["xLSTM[1:1]"] == ("unsolved", "0 of 1", "no")
    assert rows["Llama"] == ("unsolved", "0 of 3", "yes")
    assert rows["xLSTM[1:0]"] == ("mixed", "1 of 2", "partly")
    assert rows["Retention"] == ("solved", "2 of 2", "no")
    assert rows["LSTM (Block)"] == ("no finished run", "", None)
    assert rows["Mamba"] == ("not in this scale's grid", "", None)


def test_a_finding_page_counts_the_runs_that_solve(formal_main_smoke):
    artifact, runs = formal_main_smoke
    (finding,) = findings_of(artifact.paper)
    table = parity_table(
        {"lstm": [1.0, 0.95, 0.9], "xlstm_0_1": [0.3, 0.95, 1.0], "llama": [0.01, 0.2, 0.5], "xlstm_1_1": []}
    )
    checked, _ = judged(finding, table)
    page = checked_markdown(finding, checked)
    assert "| xLSTM[0:1] | solved | mixed | 2 of 3 | 0.300, 0.950, 1.000 | partly |" in page
    assert "| Llama | unsolved | unsolved | 0 of 3 | 0.010, 0.200, 0.500 | yes |" in page
    assert "| xLSTM[1:1] | solved | no finished run |  |  | - |" in page
    assert (
        "**The finding holds partly** at this scale: ours agrees for 2 of the 3 models with results at this "
        "scale; partly (solved in some runs, not all) for xLSTM[0:1]." in page
    )


NNS_FINDING = {
    "quote": "xLSTM overcomes this limitation",
    "source": "Figure 1",
    "where": {"task": "nns"},
    "than": "lstm",
    "expect": {"below": ["xlstm_0_1", "xlstm_1_0", "xlstm_1_1"], "above": ["llama"]},
}


def nns_table(values):
    return pd.DataFrame({"model": list(values), "task": "nns", "values": [tuple(runs) for runs in values.values()]})


def test_a_comparison_finding_judges_each_run_against_the_other_models_mean():
    (finding,) = findings_of({"findings": [NNS_FINDING]})
    table = nns_table(
        {
            "lstm": [0.06, 0.08],
            "xlstm_0_1": [0.01, 0.02],
            "xlstm_1_0": [0.05, 0.09],
            "xlstm_1_1": [0.08],
            "llama": [0.01],
        }
    )
    checked, rows = judged(finding, table, metric="val/mse")
    assert rows["xLSTM[0:1]"] == ("below", "2 of 2", "yes")
    assert rows["xLSTM[1:0]"] == ("mixed", "1 of 2", "partly")
    assert rows["xLSTM[1:1]"] == ("above", "0 of 1", "no")
    assert rows["Llama"] == ("below", "1 of 1", "no")
    page = checked_markdown(finding, checked)
    assert "Below means val/mse < the mean of LSTM's runs (0.070)" in page
    assert "| xLSTM[1:0] | below | mixed | 1 of 2 | 0.050, 0.090 | partly |" in page
    _, without_lstm = judged(finding, nns_table({"xlstm_0_1": [0.01]}), metric="val/mse")
    assert without_lstm["xLSTM[0:1]"] == ("no finished run of LSTM", "", None)


def test_a_comparison_with_intervals_agrees_fully_only_where_the_intervals_are_apart():
    """Below in every run, but within the spread of the runs: the intervals of a points figure decide."""
    (finding,) = findings_of({"findings": [NNS_FINDING | {"expect": {"below": ["xlstm_0_1", "xlstm_1_0"]}}]})
    table = nns_table(
        {"lstm": [0.0741, 0.0743, 0.0740], "xlstm_0_1": [0.0716, 0.0717, 0.0720], "xlstm_1_0": [0.0730, 0.0739, 0.0720]}
    )
    checked, rows = judged(finding, table, metric="val/mse", confidence=0.99)
    assert rows["xLSTM[0:1]"][2] == "yes" and rows["xLSTM[1:0]"][2] == "partly"
    assert checked.holds == "holds partly"
    assert "99% t-interval" in checked.header and "apart from LSTM's" in checked.header


@pytest.mark.parametrize(
    "change, message",
    [
        ({"than": None}, "needs 'than'"),
        ({"expect": {"below": ["a"], "solved": ["b"]}}, "not both"),
        ({"than": None, "expect": {"solved": ["a"]}}, "needs a 'threshold'"),
        ({"order": "paper"}, "names one check"),
        ({"expectt": {}}, "keys \\['expectt'\\] are not valid"),
    ],
)
def test_a_finding_states_what_its_expectations_need(change, message):
    with pytest.raises(ValueError, match=message):
        findings_of({"findings": [NNS_FINDING | change]})


@pytest.fixture(scope="module")
def formal_main_smoke():
    artifact = load_artifact("formal-main")
    return artifact, artifact.runs("smoke")


def smoke_table(artifact, runs, values):
    """The smoke cell table with the given (model, task) -> value, other cells missing."""
    frame = pd.DataFrame(
        [
            {
                **run.cell,
                "status": "done" if (run.cell["model"], run.cell["task"]) in values else "missing",
                "unavailable": None,
                "val/scaled_accuracy": 0.0,
                "test/scaled_accuracy": values.get((run.cell["model"], run.cell["task"])),
            }
            for run in runs
        ]
    )
    return cell_table(artifact, frame)


def test_titles_state_the_settings_of_the_scale(formal_main_smoke):
    artifact, runs = formal_main_smoke
    assert "lengths 40-64" in title_of(artifact, runs)  # smoke evaluates up to 64, the paper up to 256
    assert "lengths 40-256" in title_of(artifact, load_artifact("formal-main").runs("mini"))
    title = figure_title(artifact, runs, "smoke")
    assert "embedding_dim 16" in title and "max_steps 10" in title and "tests code paths, not findings" in title
    table = smoke_table(artifact, runs, {("llama", "parity"): 0.1})
    page = markdown(artifact, runs, table, "smoke", "formal-main.png", [], findings_of(artifact.paper))
    assert SCALE_NOTES["smoke"] in page and "Settings at this scale: num_blocks 2, embedding_dim 16" in page


def test_the_page_uses_the_papers_names_and_says_the_paper_prints_no_number(formal_main_smoke):
    artifact, runs = formal_main_smoke
    table = smoke_table(artifact, runs, {("retnet", "parity"): 0.5})
    cells = cells_markdown(artifact, table)
    assert "Retention" in cells and "retnet" not in cells
    assert "| Parity " in cells and "| parity " not in cells
    assert cells.count("no number¹") == len(table) and "¹ Figure 4 is an image" in cells
    page = markdown(artifact, runs, table, "smoke", None, [], findings_of(artifact.paper))
    assert "> Models such as Transformers or State Space Models without memory mixing" in page
    assert "| Retention | unsolved | unsolved | 0 of 1 | 0.500 | yes |" in page
    assert "**Does it show here?** **Yes**: of the paper's 1 finding checked below, 1 holds. (Smoke scale" in page


def test_the_colour_scale_covers_scaled_accuracy_from_minus_one_to_one(formal_main_smoke):
    artifact, runs = formal_main_smoke
    table = smoke_table(
        artifact, runs, {("llama", "parity"): -1.0, ("llama", "even_pairs"): 0.0, ("lstm", "parity"): 1.0}
    )
    figure = report_figure(artifact, table, "title")
    mesh = figure.axes[0].collections[0]
    assert mesh.get_clim() == (-1.0, 1.0)
    assert mesh.get_cmap().name == "RdBu"  # diverging: -1 and 0 get different colours
    low, middle = mesh.to_rgba([-1.0, 0.0])
    assert tuple(low) != tuple(middle)
    assert [label.get_text() for label in figure.axes[0].get_yticklabels()][:2] == ["Llama", "Retention"]
    plt.close(figure)


def test_an_artifact_file_with_an_unknown_key_is_refused(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        artifact_files()[FIXTURE].read_text().replace("artifact: sweep-fixture", "artifact: broken\nreports: {}")
    )
    with pytest.raises(ValueError, match=r"unknown keys \['reports'\]; valid keys: \['artifact', 'title'"):
        artifact_from_yaml(broken)


def test_the_fixture_report_keeps_the_paper_column_empty_without_a_note():
    artifact = dataclasses.replace(load_artifact(FIXTURE), paper={})
    table = pd.DataFrame(
        {
            "model": ["xlstm_0_1"],
            "task": ["parity"],
            "ours": [0.5],
            "std": [0.0],
            "paper": [float("nan")],
            "runs": [1],
            "note": [""],
        }
    )
    assert "no number" not in cells_markdown(artifact, table)


def test_a_cell_of_several_seeds_shows_its_mean_spread_and_how_many_seeds_solve_it(formal_main_smoke):
    artifact, runs = formal_main_smoke
    seeds = [
        {
            **run.cell,
            "seed": seed,
            "status": "done",
            "unavailable": None,
            "val/scaled_accuracy": 0.0,
            "test/scaled_accuracy": value,
        }
        for run in runs
        if (run.cell["model"], run.cell["task"]) == ("lstm", "parity")
        for seed, value in enumerate([1.0, 0.95, 0.2])
    ]
    single = {**seeds[0], "model": "llama", "test/scaled_accuracy": 0.016}
    table = cell_table(artifact, pd.DataFrame([*seeds, single]))
    lstm = table.set_index(["model", "task"]).loc[("lstm", "parity")]
    assert (lstm["runs"], lstm["solved"], lstm["min"], lstm["max"]) == (3, 2, 0.2, 1.0)
    assert lstm["ours"] == pytest.approx(2.15 / 3) and lstm["std"] == pytest.approx(0.4482, abs=1e-4)  # sample std
    cells = cells_markdown(artifact, table)
    assert "| LSTM " in cells and "0.717 ± 0.448" in cells and "0.200 to 1.000" in cells and "2 of 3" in cells
    assert "ours (mean ± sample std)" in cells
    assert "solved (>= 0.9)" in cells and "| 0.016 " in cells and "0 of 1" in cells  # one seed: no ± and no range
    page = markdown(artifact, runs, table, "smoke", None, [], [])
    assert "`range` is their lowest to highest value" in page and "`solved` counts those with" in page
    figure = report_figure(artifact, table, "title")
    texts = [text.get_text() for text in figure.axes[0].texts]
    assert "0.72\n±0.45" in texts and "0.02" in texts  # the spread in the figure, beside the mean
    assert figure.axes[0].get_xlabel() == "cell: mean over seeds ± their sample std"
    plt.close(figure)


def test_a_scales_reading_is_on_its_page_and_an_unknown_scale_key_is_refused(formal_main_smoke, tmp_path):
    artifact, runs = formal_main_smoke
    table = smoke_table(artifact, runs, {("lstm", "parity"): 1.0})
    read = dataclasses.replace(
        artifact,
        scales={**artifact.scales, "smoke": {**artifact.scales["smoke"], "reading": "Ten steps show nothing."}},
    )
    assert "\nTen steps show nothing.\n" in markdown(read, runs, table, "smoke", None, [], [])
    assert "Ten steps" not in markdown(artifact, runs, table, "smoke", None, [], [])
    with_budget = dataclasses.replace(
        artifact, scales={**artifact.scales, "mini": {"reading": {"note": "A note.", "budget": "ten times the steps."}}}
    )
    page = markdown(with_budget, runs, table, "mini", None, [], findings_of(artifact.paper))
    assert "\nA note.\n" in page and "The budget that would show it" not in page  # LSTM solves parity: it shows
    not_shown = smoke_table(artifact, runs, {("llama", "parity"): 1.0})  # the paper: Llama does not solve it
    page = markdown(with_budget, runs, not_shown, "mini", None, [], findings_of(artifact.paper))
    assert "**Does it show here?** **No**" in page and "The budget that would show it: ten times the steps." in page
    cannot_fail = dataclasses.replace(
        artifact,
        scales={**artifact.scales, "mini": {"reading": {"cannot_fail": "ten steps learn nothing.", "budget": "more."}}},
    )
    page = markdown(cannot_fail, runs, table, "mini", None, [], findings_of(artifact.paper))
    assert "**Does it show here?** **Not tested**: of the paper's" in page
    assert "cannot fail: ten steps learn nothing. The budget that would test it: more." in page
    page = markdown(cannot_fail, runs, not_shown, "mini", None, [], findings_of(artifact.paper))
    assert "**Does it show here?** **No**" in page and "cannot fail" not in page  # a finding that fails was a test
    misspelt = dataclasses.replace(artifact, scales={**artifact.scales, "mini": {"reading": {"cannot_fial": "x"}}})
    with pytest.raises(ValueError, match=r"reading keys \['cannot_fial'\] are not valid; valid choices: \['budget'"):
        markdown(misspelt, runs, table, "mini", None, [], findings_of(artifact.paper))
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        artifact_files()[FIXTURE]
        .read_text()
        .replace("artifact: sweep-fixture", "artifact: broken")
        .replace("  smoke:\n    grid:", "  smoke:\n    readin: x\n    grid:")
    )
    with pytest.raises(ValueError, match=r"scales.smoke: unknown keys \['readin'\]; valid keys: \['evaluates', 'grid'"):
        artifact_from_yaml(broken)


def test_the_page_names_a_task_that_ran_other_seeds_than_the_models_other_tasks():
    rows = [
        (model, task, seed)
        for model in ("llama", "lstm")
        for task in ("lra_listops", "lra_image_grey")
        for seed in (0, 1, 2)
    ]
    rows += [("llama", "lra_pathfinder", 0), ("lstm", "lra_pathfinder", 0)]
    done = pd.DataFrame(rows, columns=["model", "task", "seed"]).assign(run_id=[f"r{i}" for i in range(len(rows))])
    assert seeds_description(done, {}) == "seeds 0, 1, 2 (Pathfinder: seed 0) for Llama, LSTM"
    same = done[done["task"] != "lra_pathfinder"]
    assert seeds_description(same, {}) == "seeds 0, 1, 2 for Llama, LSTM"
    assert seeds_description(same[(same["model"] == "lstm") | (same["seed"] == 0)], {}) == (
        "seed 0 for Llama; seeds 0, 1, 2 for LSTM"
    )
