"""A report draws and commits the learning curves of its training runs (the selection metric at each validation
during training), and a clone without the run store redraws them from the committed curves."""

from pathlib import Path

import pandas as pd
from omegaconf import DictConfig

from experiments.cli import main
from experiments.config.artifacts import load_artifact
from experiments.reports.learning_curves import curve_metric, read_committed_curves, store_curve
from experiments.run_metrics import PARAMETERS_METRIC
from experiments.sweeps.run_execution import execute_run

CURVE_RUN = "tests.experiments.reports.test_learning_curves.curve_run"
VALIDATIONS = (5, 10)  # the steps taken before each validation during training


def curve_run(config: DictConfig, run_dir: Path) -> dict[str, float]:
    """A run that validated after 5 and 10 steps (logged, as Lightning does, at steps 4 and 9) and then its chosen
    checkpoint once more at step 10, with values of its seed and model."""
    start = 0.1 * config.seed + 0.01 * len(config.model.name)
    values = [start, start + 0.3]
    rows = [f"{step - 1},{value},\n" for step, value in zip(VALIDATIONS, values)]
    (run_dir / "metrics.csv").write_text(
        "step,val/scaled_accuracy,train/loss\n" + "".join(rows) + f"10,{values[-1]},\n"
    )
    return {
        "val/scaled_accuracy": values[-1],
        "test/scaled_accuracy": values[-1],
        "train/steps": 10.0,
        PARAMETERS_METRIC: 1000.0,
    }


def test_a_validation_during_training_is_kept_at_the_steps_taken_and_the_final_one_is_not(tmp_path):
    metrics = tmp_path / "metrics.csv"
    metrics.write_text("epoch,step,train/loss,val/perplexity\n0,49,9.0,\n0,99,,594.0\n0,199,,376.0\n1,200,,376.0\n")
    curve = store_curve(metrics, "val/perplexity", steps=200)
    assert curve.to_dict("list") == {"step": [100, 200], "val/perplexity": [594.0, 376.0]}
    assert store_curve(tmp_path / "absent.csv", "val/perplexity", steps=200).empty
    assert store_curve(metrics, "val/accuracy", steps=200).empty


def test_only_a_metric_training_validates_has_a_curve():
    assert curve_metric("val/scaled_accuracy") == "val/scaled_accuracy"
    assert curve_metric("paloma/average") is None and curve_metric("trained/val/accuracy") is None


def test_the_report_commits_its_curves_and_a_clone_without_the_run_store_draws_them_again(tmp_path, capsys):
    root, reports = tmp_path / "runs", tmp_path / "reports"
    runs = load_artifact("sweep-fixture").runs("smoke")
    for run in runs:
        assert execute_run(run, root, CURVE_RUN).status == "done"
    arguments = ["report", "sweep-fixture", "--scale", "smoke", "--root", str(root), "--destination", str(reports)]
    assert main(arguments) == 0
    folder = reports / "smoke"
    curves = pd.read_csv(folder / "sweep-fixture.curves.csv")
    assert len(curves) == 2 * len(runs) and set(curves["step"]) == set(VALIDATIONS)
    assert set(curves["run_id"]) == {run.run_id for run in runs}
    assert list(curves.columns[:2]) == ["model", "task"] and curves.columns[-1] == "val/scaled_accuracy"
    assert (folder / "sweep-fixture.curves.png").stat().st_size > 0
    page = (folder / "sweep-fixture.md").read_text()
    assert "## Learning curves" in page and "(sweep-fixture.curves.png)" in page and "for every finished run" in page
    written = (folder / "sweep-fixture.curves.csv").read_bytes()
    assert main([*arguments[:-4], "--root", str(tmp_path / "no-store"), "--destination", str(reports)]) == 0
    assert (folder / "sweep-fixture.curves.csv").read_bytes() == written  # from the committed curves alone
    assert "## Learning curves" in (folder / "sweep-fixture.md").read_text()  # the page rewritten, with them
    capsys.readouterr()


def test_committed_curves_of_a_run_come_from_the_first_file_that_has_it_and_its_id_stays_text(tmp_path):
    beside, repository = tmp_path / "beside.curves.csv", tmp_path / "repository.curves.csv"
    beside.write_text("model,run_id,step,val/accuracy\nllama,012345678901,5,0.5\nllama,012345678901,10,0.9\n")
    repository.write_text("model,run_id,step,val/accuracy\nllama,012345678901,5,0.1\nlstm,abcdefabcdef,5,0.2\n")
    curves = read_committed_curves(beside, repository)
    assert curves[["run_id", "step", "val/accuracy"]].values.tolist() == [
        ["012345678901", 5, 0.5],
        ["012345678901", 10, 0.9],
        ["abcdefabcdef", 5, 0.2],
    ]
    assert read_committed_curves(tmp_path / "absent.curves.csv") is None


def test_long_panel_titles_wrap_and_no_two_panels_titles_overlap():
    """mqar-main's panels are named by four keys (86 characters on one line ran into the next panel's title), and
    the figure's title stays clear of theirs."""
    import matplotlib.pyplot as plt

    from experiments.reports.learning_curves import curves_figure

    keys = ["task.num_kv_pairs", "model.embedding_dim", "task.context_length", "optim.lr"]
    cells = [(kv, width, 64, 0.00215) for kv in (4, 16) for width in (64, 128)]
    curves = pd.DataFrame(
        [
            {"model": "llama", **dict(zip(keys, cell)), "run_id": f"run{index}", "step": step, "val/accuracy": 0.1}
            for index, cell in enumerate(cells)
            for step in (100, 200)
        ]
    )
    figure = curves_figure(curves, "val/accuracy", keys, "mqar-main (mini): val/accuracy during training")
    renderer = figure.canvas.get_renderer()
    titles = [axes.title for axes in figure.axes if axes.get_title()]
    assert len(titles) == 4 and all("\n" in title.get_text() for title in titles)
    (figure_title,) = [text for text in figure.texts if text.get_text().startswith("mqar-main")]
    boxes = [title.get_window_extent(renderer) for title in [*titles, figure_title]]
    assert not any(first.overlaps(second) for index, first in enumerate(boxes) for second in boxes[index + 1 :])
    plt.close(figure)
