"""inference_time_generation and inference_time_decoding_throughput: the generation_time and decoding_throughput
evaluation kinds on temp_sclaw300B's models. Planning (the five 1.3B models at paper scale per length and batch size,
the grid's evaluate.settings values in each run's settings, no training run needed at the initial weights), bad
settings refused before any compute, the state's memory against a hand count (a static key-value cache grows with
its capacity, a recurrent state does not), out of memory recorded before anything is generated, the speed report's
growth exponent, and end to end at smoke scale (slow)."""

import json
import math

import numpy as np
import pandas as pd
import pytest
import torch

from experiments.config.artifacts import load_artifact
from experiments.config.configuration import ConfigError
from experiments.evaluation.generation_speed import run_decoding_throughput, run_generation_time, state_size_bytes
from experiments.reports.speed_figure import growth_exponent
from experiments.sweeps.sweep import run_sweep
from tests.evaluation_probe import load_error

GENERATION, THROUGHPUT = "inference_time_generation", "inference_time_decoding_throughput"
PAPER_MODELS = {"rwkv4", "llama", "mamba", "xlstm_1_0", "xlstm_7_1"}


@pytest.mark.slow  # 30 s of planning; the extrapolation's paper plan runs in the default suite
@pytest.mark.parametrize(
    "artifact, key, values",
    [
        (GENERATION, "length", [256, 512, 1024, 2048, 4096, 8192]),
        (THROUGHPUT, "batch_size", [2**power for power in range(12)]),
    ],
)
def test_paper_scale_measures_the_five_trained_1_3b_models_at_each_grid_value(artifact, key, values):
    runs = load_artifact(artifact).runs("paper")
    assert {(run.cell["model"], run.cell["model.size"]) for run in runs} == {(model, "1.3b") for model in PAPER_MODELS}
    assert sorted({run.config.evaluate.settings[key] for run in runs}) == values
    for run in runs:
        assert run.config.evaluate.settings[key] == run.cell[f"evaluate.settings.{key}"]
        assert run.config.evaluate.checkpoint == "initial" and run.trained_by.artifact == "temp_sclaw300B"
        assert run.config.evaluate.settings.prefill == 16 and run.config.evaluate.settings.precision == "bf16-true"
    assert len({run.run_id for run in runs}) == len(runs) == 5 * len(values)


@pytest.mark.parametrize(
    "settings, message",
    [
        ("{length: 0}", "length=0"),
        ("{prefill: -1}", "prefill=-1"),
        ("{precision: fp8}", "precision='fp8'"),
    ],
)
def test_a_bad_generation_setting_is_named_when_the_artifact_loads(artifact_folder, settings, message):
    assert message in load_error(artifact_folder, "generation_time", settings, "generation/seconds")


def write_probe(artifact_folder, evaluates: str, metric: str, grid: str = "{}") -> None:
    (artifact_folder / "probe.yaml").write_text(
        f"artifact: probe\nevaluates: {evaluates}\ngrid: {grid}\n"
        f"selection: {{metric: {metric}, mode: min, choose: [], average: [seed]}}\n"
        f"report: {{kind: table, cells: [model], metric: {metric}}}\nscales: {{smoke: {{}}, paper: {{}}}}\n"
    )


def test_initial_weights_are_refused_for_a_kind_whose_result_depends_on_them(artifact_folder):
    write_probe(
        artifact_folder,
        "{artifact: temp_sclaw300B, kind: context_extrapolation, checkpoint: initial}",
        "extrapolation/perplexity",
    )
    with pytest.raises(
        ValueError,
        match=r"checkpoint='initial'.*kind='context_extrapolation'.*"
        r"\['decoding_throughput', 'generation_time'\]",
    ):
        load_artifact("probe")


def test_a_settings_grid_key_needs_a_kind_and_its_values_are_checked(artifact_folder):
    write_probe(
        artifact_folder,
        "{artifact: temp_sclaw300B, where: {model: llama}}",
        "val/loss",
        grid="{evaluate.settings.length: [4]}",
    )
    with pytest.raises(ConfigError, match=r"evaluate.settings.length.*evaluates names no kind"):
        load_artifact("probe").runs("smoke")
    write_probe(
        artifact_folder,
        "{artifact: temp_sclaw300B, kind: generation_time, checkpoint: initial}",
        "generation/seconds",
        grid="{evaluate.settings.length: [0]}",
    )
    with pytest.raises(ConfigError, match=r"evaluate.settings.length=0"):
        load_artifact("probe").runs("smoke")


def smoke_run(artifact: str, model: str, **settings):
    """A smoke-sized run config of ``model`` (2 blocks, embedding 32) evaluated at its initial weights by the
    artifact's kind with its smoke settings, ``settings`` replaced (composed directly: planning the artifact takes
    seconds)."""
    from omegaconf import OmegaConf, open_dict

    from experiments.config.configuration import compose_run_config

    evaluates = load_artifact(artifact).evaluates_of("smoke")
    config = compose_run_config([f"model={model}", "task=lm_sample", "model.embedding_dim=32", "model.num_blocks=2"])
    with open_dict(config):
        config.evaluate = OmegaConf.create(
            {
                "artifact": "temp_sclaw300B",
                "scale": "smoke",
                "run_id": "none",
                "checkpoint": "initial",
                "kind": evaluates["kind"],
                "settings": evaluates["settings"] | settings,
            }
        )
    return config


def built_model(config):
    from experiments.evaluation.trained_models import trained_language_model

    return trained_language_model(config, None)[0]


def test_a_static_cache_holds_two_tensors_per_block_of_its_capacity_and_a_recurrent_state_is_constant():
    llama = built_model(smoke_run(GENERATION, "llama"))
    xlstm = built_model(smoke_run(GENERATION, "xlstm_1_0"))
    blocks, dim = len(llama.backbone.blocks), llama.lm_head.in_features
    cpu = torch.device("cpu")
    for capacity in (8, 64):  # keys and values, (1, NH, capacity, DH) float32 each per block
        assert state_size_bytes(llama, capacity, cpu) == blocks * 2 * capacity * dim * 4
    assert state_size_bytes(xlstm, 8, cpu) == state_size_bytes(xlstm, 64, cpu) > 0


def test_generation_time_records_the_time_per_token_and_the_memory(tmp_path):
    metrics = run_generation_time(smoke_run(GENERATION, "xlstm_1_0", length=6, warmup=1), tmp_path)
    assert metrics["generation/seconds"] > 0 and metrics["generation/memory_mib"] > 0
    assert 0 < metrics["generation/ms_per_token"] < 1000 * metrics["generation/seconds"]
    assert metrics["model/parameters"] > 0 and metrics["train/steps"] == 0
    assert not any(name.startswith("trained/") for name in metrics)  # initial weights: no training run read


def test_a_batch_over_the_memory_limit_is_out_of_memory_without_generating(tmp_path, monkeypatch):
    import experiments.evaluation.generation_speed as speed

    config = smoke_run(THROUGHPUT, "llama", batch_size=4, length=6, warmup=1, memory_limit_mib=10_000)
    within = run_decoding_throughput(config, tmp_path)
    assert within["throughput/out_of_memory"] == 0 and within["throughput/tokens_per_second"] > 0
    assert within["throughput/memory_mib"] < 10_000
    monkeypatch.setattr(speed, "greedy_generate", lambda *args, **kwargs: pytest.fail("generated over the limit"))
    config.evaluate.settings.memory_limit_mib = 1  # below the weights alone
    over = run_decoding_throughput(config, tmp_path)
    assert over["throughput/out_of_memory"] == 1 and math.isnan(over["throughput/tokens_per_second"])
    assert over["throughput/memory_limit_mib"] == 1 and over["throughput/memory_mib"] > 1


def test_throughput_on_a_cpu_needs_a_memory_limit_before_building_the_model(tmp_path, monkeypatch):
    import experiments.evaluation.generation_speed as speed

    monkeypatch.setattr(speed, "evaluated_model", lambda *args: pytest.fail("built the model"))
    with pytest.raises(ValueError, match="needs evaluate.settings.memory_limit_mib"):
        run_decoding_throughput(smoke_run(THROUGHPUT, "llama", memory_limit_mib=None), tmp_path)


@pytest.mark.parametrize("power", [1.0, 2.0])
def test_the_growth_exponent_is_the_slope_over_the_upper_half_of_x(power):
    x = pd.Series([128, 256, 512, 1024, 2048, 4096], dtype=float)
    assert growth_exponent(x, 3.0 * x**power) == pytest.approx(power)
    # a constant start (overhead) below the upper half does not bend it
    assert growth_exponent(x, pd.Series(np.maximum(3.0 * x**power, 3.0 * 1024**power))) == pytest.approx(power)


def test_the_speed_figure_ticks_the_swept_lengths_and_names_each_panel_with_its_unit():
    from experiments.config.report_layouts import SpeedReport
    from experiments.reports.speed_figure import speed_figure

    layout = SpeedReport(
        kind="speed",
        cells=["model", "length"],
        metric="extrapolation/perplexity",
        more_metrics=["extrapolation/memory_mib"],
        x="length",
    )
    lengths = [256, 512, 1024, 2048]
    table = pd.DataFrame(
        {
            "model": ["llama"] * 4 + ["xlstm_1_0"] * 4,
            "length": lengths * 2,
            "ours": [30.0, 32.0, 40.0, 90.0, 31.0, 31.5, 32.0, 33.0],
            "extrapolation/memory_mib": [10.0, 20.0, 40.0, 80.0] + [5.0] * 4,
        }
    )
    figure = speed_figure(layout, table, "title")
    perplexity, memory = [ax for ax in figure.axes if ax.get_ylabel()]  # the panels (each has a strip above it)
    figure.canvas.draw()
    for ax in (perplexity, memory):
        assert [tick.get_text() for tick in ax.get_xticklabels()] == [str(length) for length in lengths]
    assert (perplexity.get_ylabel(), memory.get_ylabel()) == ("perplexity", "memory (MiB)")
    assert [text.get_text() for text in memory.get_legend().get_texts()] == ["Llama (k +1.00)", "xLSTM[1:0] (k +0.00)"]


@pytest.mark.slow
def test_smoke_scale_generates_measures_and_reports_both_figures(tmp_path):
    """The smoke scale end to end (~2.5 min): no training run needed at the initial weights; reports with OOM."""
    from experiments.reports.report import write_report

    root, reports = tmp_path / "runs", tmp_path / "reports"
    for artifact in (GENERATION, THROUGHPUT):
        assert run_sweep(artifact, "smoke", jobs=1, root=root) == 0
        assert write_report(artifact, "smoke", root, reports).status == "written"
    assert not (root / "smoke" / "temp_sclaw300B").exists()
    throughput = pd.read_csv(reports / "smoke" / f"{THROUGHPUT}.csv")
    out = throughput.set_index(["model", "evaluate.settings.batch_size"])["throughput/out_of_memory"]
    assert out[("llama", 1)] == 0 and out[("llama", 64)] == 1  # a 16 MiB limit, 12 of weights
    for run in load_artifact(GENERATION).runs("smoke"):
        metrics = json.loads((root / "smoke" / GENERATION / run.run_id / "result.json").read_text())["metrics"]
        assert metrics["generation/seconds"] > 0
    assert (reports / "smoke" / f"{THROUGHPUT}.png").exists() and (reports / "smoke" / f"{GENERATION}.png").exists()


def test_the_compute_estimate_counts_what_the_kind_runs_through_the_model():
    from experiments.sweeps.compute_estimate import run_compute

    config = smoke_run(THROUGHPUT, "llama", batch_size=8, length=100, prefill=16, warmup=4)
    assert run_compute(config).evaluated_tokens == 8 * (16 + 4 + 100)
    config.evaluate.kind, config.evaluate.settings = "paloma", {}
    assert run_compute(config).unestimated == "paloma" and run_compute(config).flops == 0
