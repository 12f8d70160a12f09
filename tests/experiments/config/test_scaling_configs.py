"""The scaling runs (Figures 6 and 7) carry exactly the peak learning rates of Table spaj_peaklr, per model and size,
on the size presets (`model.size`), with the 15B and 300B recipes of Appendix B.2-B.3."""

import math

import pytest

from experiments.config.artifacts import load_artifact
from experiments.config.configuration import ConfigError, compose_run_config
from experiments.reports.paper_tables import paper_table
from models.catalog import language_model_sizes

# The table's "xLSTM" rows are xLSTM[1:0]'s; xLSTM[7:1], which the paper lists no rates for, takes the same.
TABLE_ROW = {"xlstm_7_1": "xlstm_1_0"}


def paper_rates(column: str) -> dict[tuple[str, str], float]:
    table = paper_table("spaj_peaklr").dropna(subset=[column])
    return {(row.model, row.size): float(getattr(row, column)) for row in table.itertuples()}


@pytest.mark.parametrize(
    "artifact, column, models, sizes",
    [
        (
            "temp_sclaw15B",
            "peak_lr_15b",
            ["rwkv4", "rwkv5", "rwkv6", "hgrn2", "llama", "mamba", "xlstm_1_0", "xlstm_7_1"],
            ["125m", "350m", "760m", "1.3b", "2.7b"],
        ),
        (
            "temp_sclaw300B",
            "peak_lr_300b",
            ["rwkv4", "llama", "mamba", "xlstm_1_0", "xlstm_7_1"],
            ["125m", "350m", "760m", "1.3b"],
        ),
    ],
)
@pytest.mark.slow  # minutes of the default suite's 10 (make test-slow)
def test_every_scaling_run_has_the_papers_rate_for_its_model_and_size(artifact, column, models, sizes):
    runs = load_artifact(artifact).runs("paper")
    rates, presets = paper_rates(column), language_model_sizes()
    assert sorted((run.cell["model"], run.cell["model.size"]) for run in runs) == sorted(
        (model, size) for model in models for size in sizes
    )
    for run in runs:
        model, size, model_config = run.cell["model"], run.cell["model.size"], run.config.model
        assert run.config.optim.lr == rates[(TABLE_ROW.get(model, model), size)], (model, size)
        preset = presets[model][size]
        assert (model_config.embedding_dim, model_config.num_blocks, dict(model_config.options)) == (
            preset["embedding_dim"],
            preset["num_blocks"],
            preset["options"],
        ), (model, size)
        assert (run.config.task.corpus, run.config.task.context_length) == ("cerebras/SlimPajama-627B", 2048)


def test_the_15b_scaling_runs_follow_table_1s_schedule():
    for run in load_artifact("temp_sclaw15B").runs("paper"):
        config = run.config
        assert (
            config.trainer.batch_size,
            config.trainer.max_steps,
            config.optim.decay_steps,
            config.optim.warmup_steps,
            config.optim.min_lr_ratio,
        ) == (256, 28170, 30000, 750, 0.1)


def test_the_300b_runs_train_600k_steps_of_256_and_the_1_3b_runs_300k_of_512():
    for run in load_artifact("temp_sclaw300B").runs("paper"):
        config = run.config
        expected = (512, 300_000) if run.cell["model.size"] == "1.3b" else (256, 600_000)
        assert (config.trainer.batch_size, config.trainer.max_steps) == expected, run.label
        assert config.optim.decay_steps is None  # "the same learning rate scheduler": the cosine ends with the run
        assert config.trainer.batch_size * config.trainer.max_steps * config.task.context_length + 1 == (
            config.task.max_train_tokens
        )  # 314.6B tokens, one pass


def test_a_size_preset_sets_the_dims_and_options_of_the_config():
    config = compose_run_config(["model=llama", "+model.size=760m", "task=lm_sample"])
    assert (config.model.embedding_dim, config.model.num_blocks, config.model.options.num_heads) == (1536, 24, 16)


@pytest.mark.parametrize(
    "overrides, message",
    [
        (
            ["model=llama", "+model.size=3b"],
            "model.size='3b' is not a size of 'llama'; valid choices: ['125m', '350m', '760m', '1.3b', '2.7b']",
        ),
        (
            ["model=lstm_block", "+model.size=125m"],
            "model.size='125m' is not a size of 'lstm_block'; valid choices: ['350m']",
        ),
        (
            ["model=llama", "+model.size=350m", "model.num_blocks=3"],
            "model.size=350m sets ['model.num_blocks'] from its preset; give the size or the dims, not both",
        ),
        (
            ["model=llama", "+model.size=350m", "+model.options.num_heads=8"],
            "model.options contradict the preset of 'llama' (option: (given, preset)): {'num_heads': (8, 16)}",
        ),
    ],
)
def test_a_bad_size_is_named_with_the_valid_choices(overrides, message):
    with pytest.raises(ConfigError) as error:
        compose_run_config([*overrides, "task=lm_sample"])
    assert message in str(error.value)


@pytest.mark.slow  # about 40 s per artifact: four LM runs
@pytest.mark.parametrize("artifact", ["temp_sclaw15B", "temp_sclaw300B"])
def test_smoke_scale_of_the_scaling_runs_draws_the_power_laws_of_its_stand_in_sizes(tmp_path, artifact):
    """The smoke scale's report keys (its stand-in sizes are embedding dims) replace the paper scale's; every run
    records its parameter count, the count the report would take from its config for a result without one."""
    import json

    import matplotlib.image
    import pandas as pd

    from experiments.reports.report import write_report
    from experiments.run_metrics import PARAMETERS_METRIC
    from experiments.sweeps.run_store import run_directory
    from experiments.sweeps.sweep import run_sweep
    from experiments.training.parameter_count import parameters_of_config

    runs, reports = tmp_path / "runs", tmp_path / "reports"
    assert run_sweep(artifact, "smoke", jobs=1, root=runs) == 0
    outcome = write_report(artifact, "smoke", runs, reports)
    assert outcome.status == "written", outcome.message
    table = pd.read_csv(reports / "smoke" / f"{artifact}.csv")
    assert sorted(zip(table["model"], table["model.embedding_dim"])) == [
        ("llama", 16),
        ("llama", 32),
        ("xlstm_1_0", 16),
        ("xlstm_1_0", 32),
    ]
    assert all(math.isfinite(value) and value > 1 for value in table["ours"])
    for run in load_artifact(artifact).runs("smoke"):
        recorded = json.loads((run_directory(run, runs) / "result.json").read_text())["metrics"][PARAMETERS_METRIC]
        assert recorded == parameters_of_config(run.config) > 1e6, run.label  # the 50304-token embedding and head
    page = (reports / "smoke" / f"{artifact}.md").read_text()
    assert "| Llama | 2 | " in page and "| xLSTM[1:0] | 2 | " in page  # each model's law through its two sizes
    assert matplotlib.image.imread(reports / "smoke" / f"{artifact}.png").shape[1] > 1000  # a figure, 150 dpi


def test_a_scale_replaces_report_keys_and_the_paper_scale_keeps_the_artifacts():
    artifact = load_artifact("temp_sclaw15B")
    assert artifact.at_scale("smoke").report["cells"] == ["model", "model.embedding_dim"]
    assert artifact.at_scale("paper").report["cells"] == ["model", "model.size"]
    assert artifact.at_scale("smoke").report["metric"] == "val/perplexity"  # the keys it does not name stay


def test_a_scale_report_that_places_an_unknown_cell_fails_when_the_artifact_loads(tmp_path):
    from experiments.config.artifacts import artifact_from_yaml

    path = tmp_path / "sizes.yaml"
    path.write_text(
        "artifact: sizes\ngrid: {model: [llama]}\noverrides: [task=mqar]\n"
        "report: {kind: table, cells: [model], metric: val/accuracy}\n"
        "scales: {smoke: {report: {columns: seed}}}\n"
    )
    with pytest.raises(ValueError) as error:
        artifact_from_yaml(path)
    assert "columns='seed' must be one of the report's cells ['model'] (at scale 'smoke')" in str(error.value)
