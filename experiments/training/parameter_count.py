"""A run's parameter count: recorded by every run in its result.json metrics (``model/parameters``: the trained
module's parameters, tied weights once), and counted again from a run's config for results recorded before runs
recorded it (the module built on the meta device: no memory, no initialisation arithmetic).

Importing this module imports no torch, so that report layouts can name the metric."""

from omegaconf import DictConfig, OmegaConf

PARAMETERS_METRIC = "model/parameters"


def count_parameters(model) -> int:
    """The parameters of an nn.Module; a tied weight is yielded once."""
    return sum(parameter.numel() for parameter in model.parameters())


def parameters_of_config(config: DictConfig) -> int:
    """The count a run of the resolved run config ``config`` records (its module as the run builds it)."""
    import torch

    from experiments.training.train import build_module  # train records the count with this module's function
    from models.flops import SkipMetaFills
    from tasks.registry import task_spec

    spec = task_spec(OmegaConf.to_container(config.task, resolve=True))
    with torch.device("meta"), SkipMetaFills():
        return count_parameters(build_module(config, spec))
