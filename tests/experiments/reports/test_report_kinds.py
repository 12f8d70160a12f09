"""Report kinds by name: the artifact's YAML picks the figure (heatmap, lines, points, table) and places the cells
in it; a bad report section is refused when the artifact loads, naming the value and the valid choices."""

import math

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from matplotlib.colors import to_hex

from experiments.config.artifacts import artifact_files, artifact_from_yaml
from experiments.config.report_layouts import (
    REPORT_KINDS,
    LinesReport,
    PointsReport,
    TableReport,
    report_layout,
)
from experiments.paths import REPOSITORY_ROOT
from experiments.reports.kinds import (
    REPORT_FIGURES,
    confidence_interval,
    lines_figure,
    points_figure,
    table_figure,
)
from experiments.reports.palette import colours
from experiments.reports.rankings import cell_names, ordering, ordering_markdown
from experiments.reports.report import write_report
from experiments.sweeps.sweep import run_sweep
from tests.sweep_fakes import RECORD_RUN

SIZES = "model.embedding_dim"


def test_every_report_kind_has_a_figure():
    assert set(REPORT_FIGURES) == set(REPORT_KINDS)


BAD_REPORTS = [
    (
        {"kind": "bars"},
        "report.kind='bars' is not valid; valid choices: ['buckets', 'heatmap', 'lines', 'points', 'scaling', 'speed', 'table']",
    ),
    ({"kind": "lines", "cells": ["model", SIZES], "metric": "val/accuracy"}, "report.x is missing"),
    (
        {"kind": "lines", "cells": ["model"], "metric": "m", "x": SIZES},
        "report.x='model.embedding_dim' must be one of the report's cells ['model']",
    ),
    (
        {"kind": "lines", "cells": ["model", SIZES], "metric": "m", "x": SIZES, "panel": "task"},
        "unknown key report.panel; did you mean report.panels?",
    ),
    (
        {"kind": "lines", "cells": ["model", SIZES], "metric": "m", "x": SIZES, "rows": {"xLSTM": []}},
        "report.rows={'xLSTM': []} must map each row's title to a non-empty list of model values",
    ),
    (
        {"kind": "lines", "cells": ["model", SIZES], "metric": "m", "x": SIZES, "rows": "task"},
        "report.rows='task' must be one of the report's cells",
    ),
    (
        {"kind": "lines", "cells": ["model", SIZES], "metric": "m", "x": SIZES, "log_x": "yes"},
        "report.log_x='yes' must be true or false",
    ),
    (
        {"kind": "points", "cells": ["model"], "metric": "val/mse", "confidence": 1.5},
        "report.confidence=1.5 must be < 1, e.g. 0.99",
    ),
    ({"kind": "points", "cells": ["model"], "metric": "val/mse", "confidence": 0}, "report.confidence=0 must be > 0"),
    ({"kind": "heatmap", "cells": ["model", "task"]}, "report.metric is missing"),
    (
        {"kind": "table", "cells": ["model"], "metric": "m", "paper_columns": {"c4": 4}},
        "report.paper_columns={'c4': 4} must map each paper column (of paper.numbers.table) to the metric of ours",
    ),
]


@pytest.mark.parametrize("report, problem", BAD_REPORTS, ids=[problem[:40] for _, problem in BAD_REPORTS])
def test_a_bad_report_section_is_named(report, problem):
    with pytest.raises(ValueError) as caught:
        report_layout(report)
    assert problem in str(caught.value)


def test_an_artifact_with_a_bad_report_is_refused_when_it_loads(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        artifact_files()["sweep-fixture"]
        .read_text()
        .replace("artifact: sweep-fixture", "artifact: broken")
        .replace("kind: heatmap", "kind: heatmapp")
    )
    with pytest.raises(ValueError, match=r"broken.yaml: report.kind='heatmapp' is not valid; valid choices"):
        artifact_from_yaml(broken)


def test_the_confidence_interval_is_students_t_over_the_runs():
    # t quantiles from a printed table: t(0.995, 2 df) = 9.925, t(0.975, 4 df) = 2.776
    low, high = confidence_interval((1.0, 2.0, 3.0), 0.99)  # mean 2, sample std 1
    assert (low, high) == pytest.approx((2 - 9.925 / math.sqrt(3), 2 + 9.925 / math.sqrt(3)), abs=1e-3)
    low, high = confidence_interval((0.0, 0.0, 1.0, 1.0, 0.5), 0.95)  # mean 0.5, sample std sqrt(1 / 4)
    assert (low, high) == pytest.approx((0.5 - 2.776 * 0.5 / math.sqrt(5), 0.5 + 2.776 * 0.5 / math.sqrt(5)), abs=1e-3)
    assert all(math.isnan(bound) for bound in confidence_interval((0.3,), 0.99))


def cells(models, tasks, sizes, values_of) -> pd.DataFrame:
    """A cell table as cell_table gives it, each cell's runs from ``values_of(model, task, size)``."""
    rows = []
    for model in models:
        for task in tasks:
            for size in sizes:
                values = tuple(values_of(model, task, size))
                mean = sum(values) / len(values)
                std = math.sqrt(sum((value - mean) ** 2 for value in values) / len(values))
                rows.append(
                    {
                        "model": model,
                        "task": task,
                        SIZES: size,
                        "ours": mean,
                        "std": std,
                        "runs": len(values),
                        "values": values,
                        "note": "",
                    }
                )
    return pd.DataFrame(rows)


def test_lines_put_one_line_per_model_in_each_row_and_panel_of_the_layout():
    table = cells(
        ["llama", "xlstm_1_0", "lstm"],
        ["cl64_kv4", "cl128_kv8"],
        [32, 64, 128],
        lambda model, task, size: (size / 128, size / 256),
    )
    layout = LinesReport(
        kind="lines",
        cells=["model", "task", SIZES],
        metric="val/accuracy",
        x=SIZES,
        panels="task",
        rows={"Attention": ["llama"], "Recurrent": ["lstm", "xlstm_1_0"]},
        log_x=True,
    )
    figure = lines_figure(layout, table, "title")
    axes = figure.axes
    assert len([ax for ax in axes if ax.get_lines()]) == 4  # 2 rows x 2 panels
    top_left, bottom_right = axes[0], axes[3]
    assert [line.get_label() for line in top_left.get_lines()] == ["Llama"]
    assert [line.get_label() for line in bottom_right.get_lines()] == ["LSTM", "xLSTM[1:0]"]
    x, y = bottom_right.get_lines()[0].get_data()
    assert list(x) == [32, 64, 128] and list(y) == pytest.approx([0.1875, 0.375, 0.75])
    assert top_left.get_xscale() == "log" and top_left.get_title() == "Cl64 kv4"
    assert len(top_left.collections) == 1  # the ± std band of a two-run line
    plt.close(figure)


def test_lines_can_put_a_row_of_panels_per_value_of_a_cell_key():
    """Experiment 2's layout: panels by the number of pairs, rows by the context length."""
    table = cells(
        ["xlstm_1_1", "rwkv5"],
        ["cl756_kv48", "cl2048_kv48", "cl2048_kv96"],
        [64, 128],
        lambda model, task, size: (0.5,),
    )
    table["context"] = table["task"].str.extract(r"cl(\d+)", expand=False).astype(int)
    table["pairs"] = table["task"].str.extract(r"kv(\d+)", expand=False).astype(int)
    layout = LinesReport(
        kind="lines",
        cells=["model", "context", "pairs", SIZES],
        metric="val/accuracy",
        x=SIZES,
        panels="pairs",
        rows="context",
    )
    figure = lines_figure(layout, table, "title")
    drawn = [ax for ax in figure.axes if ax.get_lines()]
    assert len(figure.axes) == 4 and len(drawn) == 3  # rows 756 and 2048 x panels 48 and 96; 756 has no kv 96
    assert figure.axes[0].get_ylabel().startswith("context=756") and figure.axes[2].get_ylabel().startswith(
        "context=2048"
    )
    assert [line.get_label() for line in figure.axes[3].get_lines()] == ["xLSTM[1:1]", "RWKV-5"]
    plt.close(figure)


def test_points_show_each_models_mean_with_its_interval():
    table = cells(["lstm", "xlstm_1_1"], ["nns"], [128], lambda model, task, size: (0.1, 0.2, 0.3))
    layout = PointsReport(kind="points", cells=["model"], metric="val/mse", confidence=0.99)
    figure = points_figure(layout, table, "title")
    (ax,) = figure.axes
    low, high = confidence_interval((0.1, 0.2, 0.3), 0.99)
    # one error bar per model (in its colour of every figure), from the low to the high end of its interval
    bars = [segment for container in ax.containers for segment in container.lines[2][0].get_segments()]
    assert [tuple(segment[:, 1]) for segment in bars] == [pytest.approx((low, high))] * 2
    assert len({tuple(container.lines[2][0].get_colors()[0]) for container in ax.containers}) == 2
    assert [label.get_text() for label in ax.get_xticklabels()] == ["LSTM", "xLSTM[1:1]"]
    assert "99% t-interval" in ax.get_xlabel() and "dots: the runs" in ax.get_xlabel()  # the legend of its symbols
    plt.close(figure)


def test_a_table_draws_its_cells_as_bars_beside_the_papers_in_the_papers_order():
    table = pd.DataFrame(
        {
            "model": ["llama", "xlstm_1_0", "mamba", "rwkv4"],
            "optim.lr": [1e-3, 1e-3, 1e-3, 1e-3],
            "ours": [300.0, 280.0, 350.0, 400.0],
            "paper": [15.73, 13.48, float("nan"), 14.2],
        }
    )
    layout = TableReport(kind="table", cells=["model", "optim.lr"], metric="val/perplexity")
    figure = table_figure(layout, table, "title")
    paper_axes, ours_axes = figure.axes
    # rows by the paper's value, lowest first, a cell without the paper's number last; one lr: not in the names
    assert [label.get_text() for label in paper_axes.get_yticklabels()] == ["xLSTM[1:0]", "RWKV-4", "Llama", "Mamba"]
    # the paper's 13.5-15.7 beside our 280-400 span more than a decade: both panels on one log axis, bars from the
    # round tick below the smallest value, each ending at its value
    assert paper_axes.get_xscale() == ours_axes.get_xscale() == "log"
    assert paper_axes.get_xlim() == ours_axes.get_xlim() and paper_axes.get_xlim()[0] == 10.0
    assert [bar.get_x() + bar.get_width() for bar in ours_axes.patches] == pytest.approx([280.0, 400.0, 300.0, 350.0])
    assert [bar.get_x() + bar.get_width() for bar in paper_axes.patches][:3] == pytest.approx([13.48, 14.2, 15.73])
    assert (paper_axes.get_title(), ours_axes.get_title()) == ("the paper", "ours")
    close = table_figure(layout, table.assign(ours=[15.0, 14.0, 16.0, 17.0]), "title")
    assert [axes.get_xscale() for axes in close.axes] == ["linear", "linear"]  # within a decade: linear, from 0
    plt.close(close)
    plt.close(figure)


def test_a_table_panel_spanning_a_decade_draws_its_bars_on_a_log_axis():
    """Table ablstudies: the vanilla LSTM's 2417.86 beside xLSTM[7:1]'s 13.48; ours span less than ten times."""
    table = pd.DataFrame(
        {"model": ["xlstm_7_1", "lstm_block", "lstm"], "ours": [220.0, 212.3, 808.4], "paper": [13.48, 26.01, 2417.86]}
    )
    figure = table_figure(TableReport(kind="table", cells=["model"], metric="val/perplexity"), table, "title")
    paper_axes, ours_axes = figure.axes
    assert (paper_axes.get_xscale(), ours_axes.get_xscale()) == ("log", "log")  # the paper's scale is ours
    # each bar ends at its value, from the round tick below the smallest (a log axis has no 0)
    for axes, ends in ((paper_axes, [13.48, 26.01, 2417.86]), (ours_axes, [220.0, 212.3, 808.4])):
        assert [bar.get_x() for bar in axes.patches] == [10.0] * 3
        assert [bar.get_x() + bar.get_width() for bar in axes.patches] == pytest.approx(ends)
    plt.close(figure)


def test_the_order_of_our_cells_is_compared_with_the_papers_pair_by_pair():
    table = pd.DataFrame(
        {
            "model": ["llama", "xlstm_1_0", "mamba", "rwkv4"],
            "optim.lr": [1e-3, 1e-3, 1e-3, 4e-4],
            "ours": [300.0, 280.0, 350.0, 250.0],
            "paper": [15.73, 13.48, 14.0, float("nan")],
        }
    )
    names = cell_names(table, ["model", "optim.lr"])
    assert names == ["Llama lr=0.001", "xLSTM[1:0] lr=0.001", "Mamba lr=0.001", "RWKV-4 lr=0.0004"]
    found = ordering(table, names, "min", [])
    # by hand: paper xLSTM < Mamba < Llama, ours xLSTM < Llama < Mamba: (xLSTM, Mamba) and (xLSTM, Llama) agree,
    # (Mamba, Llama) does not; tau = (2 - 1) / 3
    assert (found.pairs, found.agreeing, found.disagreeing) == (3, 2, [("Mamba lr=0.001", "Llama lr=0.001")])
    assert found.tau == pytest.approx(1 / 3)
    reversed_order = ordering(table.assign(ours=-table["ours"]), names, "max", [])  # higher is better: same pairs
    assert (reversed_order.agreeing, reversed_order.tau) == (1, pytest.approx(-1 / 3))
    assert ordering(table.iloc[:1], names[:1], "min", []) is None
    page = ordering_markdown(table, names, found, "val/perplexity", "min", [])
    assert "- the paper: xLSTM[1:0] lr=0.001 < Mamba lr=0.001 < Llama lr=0.001\n" in page  # RWKV-4: no paper number
    assert "- ours: xLSTM[1:0] lr=0.001 < Llama lr=0.001 < Mamba lr=0.001\n" in page
    assert "2 of 3 pairs are in the paper's order (Kendall's tau-a +0.33)" in page
    assert "Mamba lr=0.001 / Llama lr=0.001" in page


def size_sweep_artifact(folder, kind: str, layout: str):
    """A two-size sweep of one model on parity whose report is of ``kind`` (placed by ``layout``)."""
    (folder / "size-sweep.yaml").write_text(f"""
artifact: size-sweep
grid:
  model: [xlstm_1_0]
  task: [parity]
  {SIZES}: [16, 32]
  seed: [0, 1]
selection: {{metric: val/scaled_accuracy, mode: max, choose: [], average: [seed]}}
report: {{kind: {kind}, cells: [model, task, {SIZES}], metric: test/scaled_accuracy{layout}}}
scales:
  smoke:
    overrides: [trainer.max_steps=10, trainer.batch_size=8, trainer.num_threads=null]
""")


@pytest.mark.parametrize(
    "kind, layout, figure", [("lines", f", x: {SIZES}, panels: task", True), ("table", "", True), ("scaling", "", True)]
)
def test_the_artifact_picks_the_kind_of_its_report(tmp_path, monkeypatch, kind, layout, figure):
    monkeypatch.setenv("XLSTM_SUITE_ARTIFACTS", str(tmp_path))
    size_sweep_artifact(tmp_path, kind, layout)
    assert run_sweep("size-sweep", "smoke", jobs=1, root=tmp_path / "runs", run_function=RECORD_RUN) == 0
    outcome = write_report("size-sweep", "smoke", tmp_path / "runs", tmp_path / "reports")
    assert outcome.status == "written"
    written = {path.name for path in outcome.paths}
    assert ("size-sweep.png" in written) == figure and ("size-sweep.pdf" in written) == figure
    page = (tmp_path / "reports" / "smoke" / "size-sweep.md").read_text()
    assert ("![size-sweep](size-sweep.png)" in page) == figure
    assert "| xLSTM[1:0] | Parity" in page


def test_every_model_has_a_colour_of_its_own_whatever_the_figure_shows():
    models = sorted(path.stem for path in (REPOSITORY_ROOT / "configs" / "model").glob("*.yaml"))
    assigned = colours("model", models)
    assert len(set(assigned.values())) == len(models)  # no two models share a colour
    assert colours("model", ["rwkv4", "mamba"]) == {"rwkv4": assigned["rwkv4"], "mamba": assigned["mamba"]}
    table = pd.DataFrame({"model": ["mamba", "llama"], "ours": [1.0, 2.0], "paper": [float("nan")] * 2})
    figure = table_figure(TableReport(kind="table", cells=["model"], metric="val/perplexity"), table, "title")
    assert [to_hex(bar.get_facecolor()) for bar in figure.axes[0].patches] == [assigned["mamba"], assigned["llama"]]
    plt.close(figure)
