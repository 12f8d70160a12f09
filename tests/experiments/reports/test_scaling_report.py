"""The scaling report (Figures 6 and 7): the metric against each run's parameter count, log-log, with a power law
y = a N^b fitted per model by least squares in log-log space; its exponent in the legend and on the page."""

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from experiments.config.artifacts import load_artifact
from experiments.config.report_layouts import ScalingReport, report_layout
from experiments.reports.kinds import scaling_figure
from experiments.reports.paper_tables import paper_table
from experiments.reports.power_laws import PowerLaw, fit_power_law, formula, power_laws_markdown, scaling_lines
from experiments.reports.report import write_report
from experiments.run_metrics import PARAMETERS_METRIC
from experiments.sweeps.sweep import run_sweep
from experiments.training.parameter_count import parameters_of_config
from tests.sweep_fakes import PERPLEXITY_RUN

SIZES = "model.size"
LAYOUT = ScalingReport(kind="scaling", cells=["model", SIZES], metric="val/perplexity")


def test_the_fit_recovers_a_known_power_law():
    parameters = np.geomspace(1e5, 1e7, 7)
    fit = fit_power_law(parameters, 30 * parameters**-0.07)
    assert fit.b == pytest.approx(-0.07, abs=1e-12) and fit.a == pytest.approx(30, rel=1e-9)
    assert fit(np.array([1e6])) == pytest.approx([30 * 1e6**-0.07])


def test_with_noise_the_fit_is_least_squares_in_log_log_space_and_near_the_law():
    parameters = np.geomspace(1e5, 1e7, 9)
    values = 30 * parameters**-0.07 * np.exp(np.random.default_rng(0).normal(0, 0.01, len(parameters)))
    fit = fit_power_law(parameters, values)
    reference = stats.linregress(np.log(parameters), np.log(values))  # scipy's least squares of the same line
    assert (fit.b, math.log(fit.a)) == pytest.approx((reference.slope, reference.intercept), rel=1e-9)
    assert fit.b == pytest.approx(-0.07, abs=0.01) and fit.a == pytest.approx(30, rel=0.15)  # 1% noise: within ~4 sd


@pytest.mark.parametrize(
    "parameters, values",
    [([1e6], [10.0]), ([1e6, 1e6], [10.0, 9.0]), ([1e6, 2e6], [10.0, math.inf]), ([1e6, 2e6], [10.0, -1.0])],
)
def test_a_fit_without_two_finite_positive_sizes_is_refused_naming_the_points(parameters, values):
    with pytest.raises(ValueError, match="two or more distinct finite positive parameter counts"):
        fit_power_law(parameters, values)


def cells(rows: list[tuple]) -> pd.DataFrame:
    """A cell table as cell_table gives it: (model, size, value, parameters, runs) per cell."""
    return pd.DataFrame(
        [
            {"model": model, SIZES: size, "ours": value, PARAMETERS_METRIC: parameters, "runs": runs}
            for model, size, value, parameters, runs in rows
        ]
    )


LAWS = {"llama": (40.0, -0.08), "xlstm_1_0": (35.0, -0.09)}
TABLE = cells(
    [
        (model, size, a * count**b, count, 1)
        for model, (a, b) in LAWS.items()
        for size, count in (("125m", 1.25e8), ("350m", 3.5e8), ("760m", 7.6e8))
    ]
    + [
        ("mamba", "125m", 15.0, 1.3e8, 1),
        ("mamba", "350m", math.nan, 3.7e8, 0),  # not finished
        ("rwkv4", "125m", math.inf, 1.7e8, 1),
        ("rwkv4", "350m", 14.0, 4.3e8, 1),  # diverged
        ("rwkv4", "760m", 12.0, 8.9e8, 1),
    ]
)


def test_each_model_is_a_line_and_a_model_with_one_size_has_no_fit():
    found = {line.line: line for line in scaling_lines(TABLE, "model", LAYOUT.cells)}
    assert list(found) == ["llama", "xlstm_1_0", "mamba", "rwkv4"]
    for model, (a, b) in LAWS.items():
        assert (found[model].fit.a, found[model].fit.b) == pytest.approx((a, b), rel=1e-9)
        assert list(found[model].points["size"]) == ["size=125m", "size=350m", "size=760m"]
    mamba = found["mamba"]  # its 350m is not finished: on no line, and no reason to leave it out of a fit
    assert mamba.fit is None and list(mamba.points["parameters"]) == [1.3e8] and mamba.left_out == []
    assert mamba.note == "1 size with a finite value: no fit"
    rwkv4 = found["rwkv4"]  # the diverged size is left out and named; the two others are fitted
    assert rwkv4.fit.b == pytest.approx(math.log(12 / 14) / math.log(8.9e8 / 4.3e8))
    assert rwkv4.note == "left out of the fit (not a finite positive value): size=125m (inf, N=1.7e+08)"


def test_the_figure_is_log_log_with_one_fitted_line_per_model_that_has_two_sizes():
    figure = scaling_figure(LAYOUT, TABLE, "title")
    (ax,) = figure.axes
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("parameters", "validation perplexity")
    fits = {line.get_gid(): line for line in ax.get_lines() if (line.get_gid() or "").startswith("fit:")}
    assert sorted(fits) == ["fit:llama", "fit:rwkv4", "fit:xlstm_1_0"]
    x, y = fits["fit:llama"].get_data()
    assert (x.min(), x.max()) == pytest.approx((1.25e8, 7.6e8))  # over the data's range
    assert y == pytest.approx(40.0 * x**-0.08)
    legend = [text.get_text() for text in ax.get_legend().get_texts()]
    # RWKV-4 by hand through (4.3e8, 14) and (8.9e8, 12): b = ln(12/14) / ln(8.9/4.3) = -0.2119, a = 14 / 4.3e8^b = 945
    assert legend == [
        r"Llama: $40\,N^{-0.080}$",
        r"xLSTM[1:0]: $35\,N^{-0.090}$",
        "Mamba: no fit (1 size)",
        r"RWKV-4: $945\,N^{-0.212}$, 1 non-finite left out",
    ]
    plt.close(figure)


def test_a_law_is_written_with_a_to_three_digits_and_powers_of_ten_for_a_large_or_small_a():
    assert formula(PowerLaw(a=86012.0, b=-0.0381)) == r"$8.6\times10^{4}\,N^{-0.038}$"
    assert formula(PowerLaw(a=0.00412, b=0.5)) == r"$4.12\times10^{-3}\,N^{0.500}$"
    assert formula(PowerLaw(a=812.34, b=-0.07)) == r"$812\,N^{-0.070}$"


def test_the_page_gives_each_laws_a_and_b_beside_the_values_it_fits():
    page = power_laws_markdown(scaling_lines(TABLE, "model", LAYOUT.cells), "model", "val/perplexity")
    llama = next(line for line in page.splitlines() if line.startswith("| Llama |"))
    values = ", ".join(f"{40.0 * count**-0.08:.3f}" for count in (1.25e8, 3.5e8, 7.6e8))
    assert llama == f"| Llama | 3 | 125M, 350M, 760M | {values} | 40 | -0.0800 |  |"
    assert "| Mamba | 1 | 130M | 15.000 |  |  | 1 size with a finite value: no fit |" in page


@pytest.mark.parametrize(
    "report, problem",
    [
        (
            {"kind": "scaling", "cells": ["model"], "metric": "val/perplexity"},
            "cells=['model'] must name a key besides lines='model': the sizes of a line",
        ),
        (
            {"kind": "scaling", "cells": ["model", SIZES], "metric": "val/perplexity", "lines": "task"},
            "lines='task' must be one of the report's cells ['model', 'model.size']",
        ),
    ],
)
def test_a_bad_scaling_report_is_named(report, problem):
    with pytest.raises(ValueError) as caught:
        report_layout(report)
    assert problem in str(caught.value)


def test_the_mini_scale_plans_three_sizes_of_two_models_with_the_papers_rates():
    """The issue's done-line for mini: at least three sizes of two models; each stand-in size takes the paper's
    15B rate of the size in its place (E 64: 125M, 128: 350M, 192: 760M) and has more parameters than the last."""
    rates = {(row.model, row.size): row.peak_lr_15b for row in paper_table("spaj_peaklr").itertuples()}
    runs = load_artifact("temp_sclaw15B").runs("mini", ["task=offline_docs"])
    counts = {}
    for run in runs:
        model, width = run.cell["model"], run.cell["model.embedding_dim"]
        assert run.config.optim.lr == rates[(model, {64: "125m", 128: "350m", 192: "760m"}[width])]
        counts.setdefault(model, {})[width] = parameters_of_config(run.config)
    assert sorted(counts) == ["llama", "xlstm_1_0"]
    for by_width in counts.values():
        assert sorted(by_width) == [64, 128, 192] and sorted(by_width.values()) == [by_width[w] for w in (64, 128, 192)]


@pytest.mark.slow  # minutes of the default suite's 10 (make test-slow)
def test_a_smoke_report_of_results_without_parameter_counts_counts_them_from_the_config(tmp_path):
    """Results recorded before runs recorded their parameter count still report: the count comes from each run's
    config, its model built on the meta device, the same count a run records (tests/experiments/config/test_scaling_configs.py)."""
    runs, reports = tmp_path / "runs", tmp_path / "reports"
    assert run_sweep("temp_sclaw15B", "smoke", jobs=1, root=runs, run_function=PERPLEXITY_RUN) == 0
    outcome = write_report("temp_sclaw15B", "smoke", runs, reports)
    assert outcome.status == "written", outcome.message
    assert {path.name for path in outcome.paths} >= {"temp_sclaw15B.png", "temp_sclaw15B.pdf"}
    table = pd.read_csv(reports / "smoke" / "temp_sclaw15B.csv")
    planned = {
        (run.cell["model"], run.cell["model.embedding_dim"]): run
        for run in load_artifact("temp_sclaw15B").runs("smoke")
    }
    assert [
        parameters_of_config(planned[(model, width)].config)
        for model, width in zip(table["model"], table["model.embedding_dim"])
    ] == list(table[PARAMETERS_METRIC])
    page = (reports / "smoke" / "temp_sclaw15B.md").read_text()
    assert "## Power laws" in page and "![temp_sclaw15B](temp_sclaw15B.png)" in page
    assert page.count(" | 2 | ") == 2  # both models fitted through their two sizes
