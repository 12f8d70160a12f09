"""A planned grid is kept on disk (experiments.config.plan_cache): a second plan reads it, composing and checking
nothing, and gives the same runs; its key changes with everything that could change the plan; a damaged entry is
ignored with a warning and replaced; what the key cannot see (a task's files) is checked again."""

import dataclasses
import json

import pytest

import experiments.config.cell_composer as cell_composer
from experiments.config import artifacts, compose_cache, plan_cache
from experiments.config.artifacts import load_artifact
from experiments.config.configuration import ConfigError

FIXTURE = "sweep-fixture"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """The caches switched on in a fresh folder; composes and config checks counted, all in this process (no
    prefetch in child processes, whose composes the counts would not see)."""
    monkeypatch.setenv(compose_cache.CACHE_VARIABLE, str(tmp_path / "cache"))
    monkeypatch.setattr(cell_composer, "usable_cpus", lambda: 1)
    calls = {"compose": 0, "validate": 0}
    compose, validate = cell_composer.compose_unresolved, artifacts.validate_run_config

    def counting_compose(overrides):
        calls["compose"] += 1
        return compose(overrides)

    def counting_validate(config):
        calls["validate"] += 1
        return validate(config)

    monkeypatch.setattr(cell_composer, "compose_unresolved", counting_compose)
    monkeypatch.setattr(artifacts, "validate_run_config", counting_validate)
    return calls


def plan(runs) -> list[tuple]:
    return [(run.cell, run.overrides, run.unavailable, run.run_id, run.container) for run in runs]


def test_a_second_plan_composes_and_checks_nothing_and_gives_the_same_runs(cache):
    first = load_artifact(FIXTURE).runs("smoke")
    assert cache == {"compose": 6, "validate": 6}  # 3 models x 2 tasks
    second = load_artifact(FIXTURE).runs("smoke")
    assert cache == {"compose": 6, "validate": 6}  # nothing more
    assert plan(second) == plan(first) and all(run.config.trainer.max_steps == 10 for run in second)


def test_the_key_changes_with_the_scale_the_overrides_the_artifact_the_configs_the_code_and_the_models(
    cache, monkeypatch
):
    artifact = load_artifact(FIXTURE)
    key = plan_cache.plan_key(artifact, "smoke", [])
    assert plan_cache.plan_key(load_artifact(FIXTURE), "smoke", []) == key  # the same file, the same key
    changed = {
        "scale": plan_cache.plan_key(artifact, "mini", []),
        "overrides": plan_cache.plan_key(artifact, "smoke", ["seed=3"]),
        "artifact": plan_cache.plan_key(dataclasses.replace(artifact, overrides=["model.num_blocks=3"]), "smoke", []),
        "source": plan_cache.plan_key(artifact, "smoke", [], source=artifact),
    }
    for name, module, attribute, replacement in [
        ("code", plan_cache, "code_digest", lambda: "other code"),
        ("configs", compose_cache, "tree_fingerprint", lambda folders=(): "other configs"),
        ("models", plan_cache, "known_backbones", lambda: ["llama"]),
    ]:
        with monkeypatch.context() as patch:
            patch.setattr(module, attribute, replacement)
            changed[name] = plan_cache.plan_key(artifact, "smoke", [])
    assert key not in changed.values() and len(set(changed.values())) == len(changed)


def test_the_code_digest_changes_with_a_file_of_the_planning_code(tmp_path):
    code = tmp_path / "experiments" / "config"
    code.mkdir(parents=True)
    (code / "planning.py").write_text("A = 1\n")
    before = plan_cache.code_files_digest.__wrapped__(tmp_path, "")  # not the process's remembered digest
    (code / "planning.py").write_text("A = 2\n")
    assert plan_cache.code_files_digest.__wrapped__(tmp_path, "") != before


def test_no_key_with_the_cache_switched_off(monkeypatch):
    monkeypatch.setenv(compose_cache.CACHE_VARIABLE, "off")
    assert plan_cache.plan_key(load_artifact(FIXTURE), "smoke", []) is None


@pytest.mark.parametrize(
    "entry", ["", "{not json", "[]", '{"key": "other", "runs": []}'], ids=["empty-file", "garbage", "list", "other-key"]
)
def test_a_damaged_entry_is_ignored_with_one_warning_and_replaced(entry, cache, capsys):
    expected = plan(load_artifact(FIXTURE).runs("smoke"))
    (path,) = (compose_cache.cache_folder() / "plans").rglob("*.json")
    path.write_text(entry)
    capsys.readouterr()
    assert plan(load_artifact(FIXTURE).runs("smoke")) == expected
    warnings = [line for line in capsys.readouterr().err.splitlines() if "plan cache entry" in line]
    assert len(warnings) == 1 and str(path) in warnings[0] and "planning again" in warnings[0]
    assert json.loads(path.read_text())["key"] == plan_cache.plan_key(load_artifact(FIXTURE), "smoke", [])


def test_a_run_of_a_damaged_entry_that_does_not_fit_is_named(cache):
    load_artifact(FIXTURE).runs("smoke")
    (path,) = (compose_cache.cache_folder() / "plans").rglob("*.json")
    content = json.loads(path.read_text())
    content["runs"][1]["run_id"] = None  # a config without its id
    assert (
        plan_cache.entry_problem(content, content["key"], 0)
        == "a run (1) whose config, run id or training run do not fit"
    )


def test_a_task_check_that_fails_now_fails_a_cached_plan(cache, monkeypatch):
    load_artifact(FIXTURE).runs("smoke")
    monkeypatch.setattr(plan_cache, "task_problems", lambda task: [f"task.corpus: {task['name']} has no files"])
    with pytest.raises(ConfigError, match="has no files"):
        load_artifact(FIXTURE).runs("smoke")
