"""Hydra's config files, each loaded once per process (experiments.config.hydra_files), compose every structure of
the paper's grids as composes that read every file afresh do, and a file changed on disk is read again."""

import shutil

import pytest
from omegaconf import OmegaConf

from experiments.config import hydra_files
from experiments.config.artifacts import known_artifacts, load_artifact
from experiments.config.configuration import (
    CONFIG_GROUPS,
    CONFIGS,
    EXTRA_CONFIGS_VARIABLE,
    compose_run_config,
    compose_unresolved,
)


def structures(artifacts: list[str]) -> list[list[str]]:
    """The distinct config-group choices (model, task, ...) of the artifacts' paper grids."""
    found = {
        tuple(override for override in run.overrides if override.split("=")[0].lstrip("+") in CONFIG_GROUPS)
        for artifact in artifacts
        for run in load_artifact(artifact).runs("paper")
    }
    return [list(structure) for structure in sorted(found)]


def composed(structures: list[list[str]]) -> list[dict]:
    return [OmegaConf.to_container(compose_run_config(structure)) for structure in structures]


def assert_composes_as_fresh_reads(monkeypatch, artifacts: list[str]) -> None:
    monkeypatch.setenv("XLSTM_SUITE_COMPOSE_CACHE", "off")
    grid = structures(artifacts)
    hydra_files.forget_loaded_files()
    once = composed(grid)  # in order: a compose that changed a shared loaded file would show in the ones after it
    hydra_files.forget_loaded_files()
    monkeypatch.setattr(hydra_files, "load_each_file_once", lambda: None)
    assert once == composed(grid)


def test_files_loaded_once_compose_as_files_read_at_each_compose(monkeypatch):
    assert_composes_as_fresh_reads(monkeypatch, ["mqar-app-small"])  # 14 models on one task


@pytest.mark.slow  # 255 structures, each composed twice
def test_files_loaded_once_compose_every_paper_grid_as_fresh_reads(monkeypatch):
    assert_composes_as_fresh_reads(monkeypatch, known_artifacts())


def test_a_config_file_changed_on_disk_is_read_again(monkeypatch, tmp_path):
    (tmp_path / "model").mkdir()
    plug_in = tmp_path / "model" / "llama_copy.yaml"
    shutil.copy(CONFIGS / "model" / "llama.yaml", plug_in)
    monkeypatch.setenv(EXTRA_CONFIGS_VARIABLE, str(tmp_path))
    width = compose_unresolved(["model=llama_copy"]).model.embedding_dim
    plug_in.write_text(plug_in.read_text().replace(f"embedding_dim: {width}", f"embedding_dim: {width * 2}"))
    assert compose_unresolved(["model=llama_copy"]).model.embedding_dim == width * 2
