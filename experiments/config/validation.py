"""Checks of a composed run config that need no compute: they run while a sweep is planned, before anything is
written to the run store, and import no torch (a bad config is rejected in about a second).

Every key is checked against the run schema (experiments.config.run_schema), the task family's schema (tasks.registry)
and the backbone's config dataclass (models.catalog); every problem is reported at once, one line each. The problems of
the model section and of the run schema's own sections (optim, trainer, debug, evaluate) are a function of their
values, so they are remembered per process: a grid's cells share most of them, and only what differs is checked
again. A task's are not remembered: a task family may check files (a local corpus: tasks.lm.corpus).
"""

import functools
import json

from omegaconf import DictConfig, OmegaConf

from experiments.config.config_schema import section_problems
from experiments.config.configuration import ConfigError
from experiments.config.evaluation_kinds import settings_problems
from experiments.config.run_schema import SECTIONS, EvaluateConfig, ModelSection, RunConfig
from models.catalog import backbone_config, known_backbones
from tasks.registry import task_families


def backbone_options(model: DictConfig) -> dict:
    return OmegaConf.to_container(model.options, resolve=True) if model.get("options") else {}


def validate_run_config(config: DictConfig | dict) -> None:
    """ConfigError listing every bad value of the run config (an OmegaConf config, or a resolved plain one), one per
    line."""
    problems = run_config_problems(
        OmegaConf.to_container(config, resolve=True) if isinstance(config, DictConfig) else config
    )
    if problems:
        raise ConfigError(problems_message(problems))


def problems_message(problems: list[str]) -> str:
    if len(problems) == 1:
        return problems[0]
    return f"{len(problems)} bad values:\n" + "\n".join(f"  {problem}" for problem in problems)


def run_config_problems(config: dict) -> list[str]:
    problems = section_problems(RunConfig, config, "")
    if not all(isinstance(config.get(name), dict) for name in ("model", "task", *SECTIONS)):
        return problems
    for name, schema in SECTIONS.items():
        problems += remembered_problems(schema, config[name], name)
    if config.get("evaluate") is not None:
        problems += remembered_problems(EvaluateConfig, config["evaluate"], "evaluate")
        if isinstance(config["evaluate"], dict) and config["evaluate"].get("kind") is not None:
            problems += settings_problems(config["evaluate"]["kind"], config["evaluate"].get("settings"), "evaluate")
    problems += task_problems(config["task"])
    problems += list(model_problems(json.dumps(config["model"], sort_keys=True)))
    return problems


def task_problems(task: dict) -> list[str]:
    family, families = task.get("family"), task_families()
    if family not in families:
        return [f"task.family={family!r} is not valid; valid choices: {sorted(families)}"]
    return section_problems(families[family].config, task, "task")


_section_problems: dict[tuple[type, str, str], list[str]] = {}  # (schema, section name, repr of its values) -> problems
SECTIONS_KEPT = 100_000


def remembered_problems(schema: type, values, name: str) -> list[str]:
    """``section_problems`` of a schema that checks values only, remembered by the schema and the repr of the values
    (which tells 1, 1.0, True and '1' apart)."""
    key = (schema, name, repr(values))
    if key not in _section_problems:
        if len(_section_problems) >= SECTIONS_KEPT:
            _section_problems.clear()
        _section_problems[key] = section_problems(schema, values, name)
    return list(_section_problems[key])


@functools.lru_cache(maxsize=4096)
def model_problems(model_json: str) -> tuple[str, ...]:
    """The model section's keys and types, then the backbone's own config check (cached: a sweep's runs share a
    handful of models)."""
    model = json.loads(model_json)
    if model.get("name") not in known_backbones():
        return (f"model.name={model.get('name')!r} is not valid; valid choices: {known_backbones()}",)
    problems = section_problems(ModelSection, model, "model")
    if problems:
        return tuple(problems)
    try:
        backbone_config(
            model["name"],
            embedding_dim=model["embedding_dim"],
            num_blocks=model["num_blocks"],
            **(model["options"] or {}),
        )
    except (ValueError, TypeError) as error:
        return (str(error),)
    return ()
