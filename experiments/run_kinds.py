"""What a planned run executes, by its kind: training (a training run, or an evaluation of a checkpoint on its task's
own metrics) or the run function of its evaluation kind (experiments.config.evaluation_kinds names the kinds and
checks their settings).

A sweep's workers (experiments.sweeps.run_execution) call ``run``: it is the one way from sweeps into training and
evaluation, which themselves import the run store of sweeps. Each run function is imported when a run of its kind
starts: torch and Lightning load in the worker that runs it, never while a sweep is planned.
"""

from collections.abc import Callable
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

RunFunction = Callable[[DictConfig, Path], dict[str, float]]  # (run config, run directory) -> result.json's metrics
# What every run function imports first (torch, Lightning, the models, the tasks), by name: a local sweep's forkserver
# imports it once, before it forks the workers (experiments.sweeps.local_launcher), which the sweep itself must not
FIRST_IMPORTS = ["experiments.training.train"]


def training() -> RunFunction:
    from experiments.training.train import run_training

    return run_training


def paloma() -> RunFunction:
    from experiments.evaluation.paloma_run import run_paloma

    return run_paloma


def lmeval() -> RunFunction:
    from experiments.evaluation.lmeval_run import run_lmeval

    return run_lmeval


def context_extrapolation() -> RunFunction:
    from experiments.evaluation.extrapolation_run import run_context_extrapolation

    return run_context_extrapolation


def generation_time() -> RunFunction:
    from experiments.evaluation.generation_speed import run_generation_time

    return run_generation_time


def decoding_throughput() -> RunFunction:
    from experiments.evaluation.generation_speed import run_decoding_throughput

    return run_decoding_throughput


# evaluation kind (experiments.config.evaluation_kinds.EVALUATION_KINDS) -> its run function, imported when asked for
EVALUATION_RUNS: dict[str, Callable[[], RunFunction]] = {
    "paloma": paloma,
    "lmeval": lmeval,
    "context_extrapolation": context_extrapolation,
    "generation_time": generation_time,
    "decoding_throughput": decoding_throughput,
}


def run_function(config: DictConfig) -> RunFunction:
    """The run function of a planned run: its evaluation kind's (``evaluate.kind``), else training's."""
    kind = OmegaConf.select(config, "evaluate.kind")
    return training() if kind is None else EVALUATION_RUNS[kind]()


def run(config: DictConfig, run_dir: Path) -> dict[str, float]:
    """Run a planned run in ``run_dir``: the metrics for its result.json."""
    return run_function(config)(config, run_dir)
