"""Checks of a composed run config that need no compute: they run while a sweep is planned, before anything is
written to the run store, and import no torch (a bad config is rejected in about a second)."""

import functools
import json

from omegaconf import DictConfig, OmegaConf

from experiments.configuration import ConfigError
from models.catalog import backbone_config, known_backbones
from tasks.formal_languages import get_task

LOGGERS = ("csv", "tensorboard", "wandb")
TASK_FAMILIES = ("formal_language",)


def backbone_options(model: DictConfig) -> dict:
    return OmegaConf.to_container(model.options, resolve=True) if model.get("options") else {}


def _check_task(task: DictConfig) -> None:
    if task.family not in TASK_FAMILIES:
        raise ConfigError(f"unknown task.family {task.family!r}; valid choices: {list(TASK_FAMILIES)}")
    minimum = get_task(task.name).min_length
    if task.train_max_length < minimum:
        raise ConfigError(f"task.train_max_length={task.train_max_length} is below {task.name}'s shortest sequence ({minimum})")
    if not minimum <= task.eval_min_length <= task.eval_max_length:
        raise ConfigError(
            f"task.eval_min_length={task.eval_min_length} and task.eval_max_length={task.eval_max_length} must satisfy "
            f"{minimum} <= eval_min_length <= eval_max_length"
        )


def validate_run_config(config: DictConfig) -> None:
    """Model (its config dataclass, which checks every value the module build depends on), task and trainer
    settings; ConfigError names the bad value.

    Runs of a sweep differ mostly in learning rate and seed: each (model, task, logger) is checked once."""
    parts = (config.model, config.task, config.trainer.logger)
    _validate(*(json.dumps(OmegaConf.to_container(part), sort_keys=True) if isinstance(part, DictConfig) else part
                for part in parts))


@functools.lru_cache(maxsize=4096)
def _validate(model_json: str, task_json: str, logger: str) -> None:
    _validate_parts(OmegaConf.create(json.loads(model_json)), OmegaConf.create(json.loads(task_json)), logger)


def _validate_parts(model: DictConfig, task: DictConfig, logger: str) -> None:
    if model.name not in known_backbones():
        raise ConfigError(f"unknown model {model.name!r}; valid choices: {known_backbones()}")
    if logger not in LOGGERS:
        raise ConfigError(f"unknown trainer.logger {logger!r}; valid choices: {list(LOGGERS)}")
    try:
        backbone_config(model.name, embedding_dim=model.embedding_dim, num_blocks=model.num_blocks,
                        **backbone_options(model))
        _check_task(task)
    except ConfigError:
        raise
    except (ValueError, TypeError) as error:
        raise ConfigError(f"{model.name} / {task.name}: {error}") from None
