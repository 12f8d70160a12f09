"""The registries that experiments/ reaches the families and the run functions through: models' display names, the
run kinds (training and every evaluation kind), task families plugged in by installed packages' entry points, the
text of language-model evaluations; and that importing them while a sweep is planned pulls in no torch."""

import subprocess
import sys
from importlib.metadata import EntryPoint

import pytest
import yaml
from omegaconf import OmegaConf

from experiments import run_kinds
from experiments.config.evaluation_kinds import EVALUATION_KINDS
from experiments.display import model_name
from experiments.paths import REPOSITORY_ROOT
from experiments.sweeps.run_execution import DEFAULT_RUN_FUNCTION, import_run_function
from models.catalog import display_name, known_backbones
from tasks import registry
from tasks.registry import ENTRY_POINT_GROUP, task_families, validation_sequences

MODEL_CONFIGS = sorted((REPOSITORY_ROOT / "configs" / "model").glob("*.yaml"))


def test_every_model_config_and_backbone_has_the_paper_s_name_from_its_family():
    names = {path.stem: display_name(path.stem) for path in MODEL_CONFIGS} | {
        name: display_name(name) for name in known_backbones()
    }
    assert not [name for name, shown in names.items() if shown == name], "models without a display name"
    assert len(set(names.values())) == len(names), "two models shown by one name"
    assert (model_name("xlstm_7_1"), model_name("mamba_tied"), model_name("toy_model")) == (
        "xLSTM[7:1]",
        "Mamba (WT)",
        "toy_model",
    )


def test_a_model_config_shown_by_another_name_than_its_backbone_is_a_variant_of_it():
    for path in MODEL_CONFIGS:
        backbone = yaml.safe_load(path.read_text())["name"]
        assert backbone in known_backbones(), path
        if path.stem != backbone:
            assert display_name(path.stem).startswith(display_name(backbone)), path


def test_every_evaluation_kind_has_a_run_function_and_a_run_without_a_kind_trains():
    assert set(run_kinds.EVALUATION_RUNS) == set(EVALUATION_KINDS)
    for kind, load in run_kinds.EVALUATION_RUNS.items():
        function = load()
        assert callable(function) and function.__name__.startswith("run_"), kind
        assert run_kinds.run_function(OmegaConf.create({"evaluate": {"kind": kind}})) is function
    from experiments.training.train import run_training

    for config in ({}, {"evaluate": None}, {"evaluate": {"kind": None, "checkpoint": "best"}}):
        assert run_kinds.run_function(OmegaConf.create(config)) is run_training


def test_the_sweep_s_default_run_function_is_the_run_kinds_by_the_name_workers_get():
    assert import_run_function(DEFAULT_RUN_FUNCTION) is run_kinds.run


@pytest.fixture
def installed(monkeypatch):
    """Entry points of group ENTRY_POINT_GROUP as installed packages would declare them."""

    def install(*values: str) -> None:
        points = [
            EntryPoint(name=f"plug-in-{number}", value=value, group=ENTRY_POINT_GROUP)
            for number, value in enumerate(values)
        ]
        monkeypatch.setattr(
            "importlib.metadata.entry_points", lambda group: points if group == ENTRY_POINT_GROUP else []
        )
        registry.installed_plug_ins.cache_clear()

    yield install
    registry.installed_plug_ins.cache_clear()


def test_a_task_family_plugged_in_by_an_installed_package_s_entry_point(installed):
    installed("tests.toy_task:TASK_FAMILIES")
    families = task_families()
    assert families["toy"].config.__name__ == "PreviousTokenConfig"
    assert set(families) == set(registry.TASK_FAMILIES) | {"toy"}


@pytest.mark.parametrize(
    "value, message",
    [
        ("tests.no_such_module:TASK_FAMILIES", "cannot load it"),
        ("tests.toy_task:PreviousTokenConfig", "PreviousTokenConfig must be a non-empty mapping of family name"),
        ("tasks.registry:TASK_FAMILIES", "task family 'formal_language' is registered already"),
    ],
)
def test_a_bad_entry_point_is_named(installed, value, message):
    installed(value)
    with pytest.raises(
        ValueError, match=f"entry point 'plug-in-0' \\({value}\\) of group '{ENTRY_POINT_GROUP}'.*{message}"
    ):
        task_families()


def test_validation_sequences_are_asked_of_a_family_of_text_only():
    with pytest.raises(
        ValueError,
        match=r"task 'mqar' is of family 'mqar', whose tasks are not text .*"
        r"families of text: \['lm'\]",
    ):
        validation_sequences({"name": "mqar", "family": "mqar"}, 4)


def test_the_registries_a_sweep_plans_with_import_no_torch():
    code = (
        "import sys\n"
        "import experiments.run_kinds, experiments.sweeps.run_execution, experiments.config.evaluation_kinds\n"
        "import experiments.display, tasks.registry, models.catalog\n"
        "tasks.registry.task_families(); tasks.registry.TEXT.paloma.sources\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'lightning'))\n"
        "assert not loaded, loaded"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPOSITORY_ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
