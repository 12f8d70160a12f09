"""A run's parameter count counted again from its config, for results recorded before runs recorded it
(experiments.run_metrics): the module built as the run builds it, on the meta device (no memory, no initialisation
arithmetic)."""

from omegaconf import DictConfig, OmegaConf

from experiments.run_metrics import count_parameters


def parameters_of_config(config: DictConfig) -> int:
    """The count a run of the resolved run config ``config`` records (its module as the run builds it)."""
    import torch

    from experiments.training.train import build_module  # train records the count with this module's function
    from models.flops import SkipMetaFills
    from tasks.registry import task_spec

    spec = task_spec(OmegaConf.to_container(config.task, resolve=True))
    with torch.device("meta"), SkipMetaFills():
        return count_parameters(build_module(config, spec))
