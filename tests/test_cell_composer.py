"""Planning a grid composes once per cell structure, and every cell's config is the one a full compose gives."""

import pytest

import experiments.cell_composer as cell_composer
from experiments.artifacts import load_artifact, run_id_of
from experiments.configuration import ConfigError, compose_run_config, config_yaml


@pytest.fixture
def compose_count(monkeypatch):
    calls = []
    compose = cell_composer.compose_unresolved

    def counting(overrides):
        calls.append(list(overrides))
        return compose(overrides)

    monkeypatch.setattr(cell_composer, "compose_unresolved", counting)
    return calls


def test_cells_that_differ_in_learning_rate_and_seed_share_a_compose_and_equal_a_full_compose(compose_count):
    runs = load_artifact("sweep-fixture").runs("paper")  # 3 models x 2 tasks x 3 lrs x 2 seeds
    assert len(runs) == 36 and len(compose_count) == 6
    for run in runs:
        full = compose_run_config(run.overrides)
        assert config_yaml(run.config) == config_yaml(full), run.label
        assert run.run_id == run_id_of(full)
        assert run.config.optim.lr == run.cell["optim.lr"] and run.config.seed == run.cell["seed"]


def test_an_interpolation_that_reads_a_grid_value_composes_every_cell(compose_count):
    runs = load_artifact("sweep-fixture").runs("paper", ["+debug.lr_copy=${optim.lr}"])
    assert len(compose_count) == 36
    assert all(run.config.debug.lr_copy == run.cell["optim.lr"] for run in runs)


def test_the_first_cell_of_every_model_is_composed_first(compose_count):
    with pytest.raises(ConfigError, match="divisible by mlstm.num_heads=5"):  # xlstm_0_1 has no mLSTM block
        load_artifact("sweep-fixture").runs("paper", ["+model.options.mlstm.num_heads=5"])
    assert [overrides[:2] for overrides in compose_count] == [["model=xlstm_0_1", "task=parity"],
                                                              ["model=xlstm_1_0", "task=parity"]]


def test_a_malformed_override_is_named():
    with pytest.raises(ConfigError, match="malformed override 'seed'"):
        load_artifact("sweep-fixture").runs("paper", ["seed"])
