"""Checks of a composed run config that need no compute: they run while a sweep is planned, before anything is
written to the run store."""

import torch
from omegaconf import DictConfig, OmegaConf

from experiments.configuration import ConfigError
from models import build_backbone, known_backbones

LOGGERS = ("csv", "tensorboard", "wandb")
TASK_FAMILIES = ("formal_language",)


def backbone_options(model: DictConfig) -> dict:
    return OmegaConf.to_container(model.options, resolve=True) if model.get("options") else {}


def _check_task(task: DictConfig) -> None:
    if task.family not in TASK_FAMILIES:
        raise ConfigError(f"unknown task.family {task.family!r}; valid choices: {list(TASK_FAMILIES)}")
    from tasks.formal_languages import get_task

    minimum = get_task(task.name).min_length
    if task.train_max_length < minimum:
        raise ConfigError(f"task.train_max_length={task.train_max_length} is below {task.name}'s shortest sequence ({minimum})")
    if not minimum <= task.eval_min_length <= task.eval_max_length:
        raise ConfigError(
            f"task.eval_min_length={task.eval_min_length} and task.eval_max_length={task.eval_max_length} must satisfy "
            f"{minimum} <= eval_min_length <= eval_max_length"
        )


def validate_run_config(config: DictConfig) -> None:
    """Model (built on the meta device: no memory), task and trainer settings; ConfigError names the bad value."""
    if config.model.name not in known_backbones():
        raise ConfigError(f"unknown model {config.model.name!r}; valid choices: {known_backbones()}")
    if config.trainer.logger not in LOGGERS:
        raise ConfigError(f"unknown trainer.logger {config.trainer.logger!r}; valid choices: {list(LOGGERS)}")
    try:
        with torch.device("meta"):
            build_backbone(config.model.name, embedding_dim=config.model.embedding_dim,
                           num_blocks=config.model.num_blocks, **backbone_options(config.model))
        _check_task(config.task)
    except ConfigError:
        raise
    except (ValueError, TypeError) as error:
        raise ConfigError(f"{config.model.name} / {config.task.name}: {error}") from None
