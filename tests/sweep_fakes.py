"""Fake run functions for the sweep runner's tests, used through the same dotted path as experiments.training.train.

They follow the config: ``+debug.sleep_seconds=S`` sleeps S seconds, ``+debug.fail_model=NAME`` raises for that
model, ``+debug.exit_model=NAME`` kills the worker process with SIGKILL at once (as the kernel's out-of-memory
killer would). Every start appends a line to ``executions.log`` in the run directory, so tests count how often a run
was executed.
"""

import dataclasses
import os
import signal
import time
from collections.abc import Sequence
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from experiments.config.artifacts import Artifact, load_artifact
from experiments.run_metrics import PARAMETERS_METRIC

EXECUTIONS = "executions.log"
RECORD_RUN = "tests.sweep_fakes.record_run"
PERPLEXITY_RUN = "tests.sweep_fakes.perplexity_run"
THREADS_RUN = "tests.sweep_fakes.threads_run"
UNBUILT_MODEL = "unbuilt_model"  # neither configs/model/unbuilt_model.yaml nor a registry entry: planned as unavailable


def record_run(config: DictConfig, run_dir: Path) -> dict[str, float]:
    append_line(run_dir / EXECUTIONS, str(os.getpid()))
    if OmegaConf.select(config, "debug.exit_model") == config.model.name:
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(OmegaConf.select(config, "debug.sleep_seconds", default=0.0))
    if OmegaConf.select(config, "debug.fail_model") == config.model.name:
        raise RuntimeError(f"injected failure of model {config.model.name}")
    metrics = {
        "val/scaled_accuracy": 0.5 + 0.1 * config.seed,
        "test/scaled_accuracy": 0.25,
        # a stand-in count where a training run records its model's: a report then builds no model to count it
        PARAMETERS_METRIC: 1000.0 * OmegaConf.select(config, "model.embedding_dim", default=1),
    }
    (run_dir / "metrics.csv").write_text(
        "step,val/scaled_accuracy\n" + f"{config.trainer.max_steps},{metrics['val/scaled_accuracy']}\n"
    )
    return metrics


def perplexity_run(config: DictConfig, run_dir: Path) -> dict[str, float]:
    """A language-model run's result without training, as runs recorded it before they recorded their parameter
    count: val/perplexity 300 E^-0.5 of the embedding dim E."""
    return {"val/perplexity": 300.0 * config.model.embedding_dim**-0.5}


def append_line(path: Path, line: str) -> None:
    with open(path, "a") as handle:
        handle.write(line + "\n")


def count_lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def threads_run(config: DictConfig, run_dir: Path) -> dict[str, float]:
    """Reports the torch intra-op threads the worker set from trainer.num_threads."""
    import torch

    return {"threads": torch.get_num_threads()}


def small_artifact(models: Sequence[str], tasks: Sequence[str] = ("parity",), seeds: Sequence[int] = (0,)) -> Artifact:
    """The fixture artifact with a smaller smoke grid (the sweep runner takes an Artifact as well as a name)."""
    artifact = load_artifact("sweep-fixture")
    grid = {"model": list(models), "task": list(tasks), "optim.lr": [1.0e-3], "seed": list(seeds)}
    return dataclasses.replace(artifact, scales={"smoke": artifact.scales["smoke"] | {"grid": grid}})


NON_FINITE_RUN = "tests.sweep_fakes.non_finite_run"


def non_finite_run(config: DictConfig, run_dir: Path) -> dict[str, float]:
    """A run function whose validation metric is NaN although its run did not diverge (a bug, not a result)."""
    return {"val/scaled_accuracy": float("nan"), "test/scaled_accuracy": 0.25}


HELD_RUN = "tests.sweep_fakes.held_run"
HOLD = "hold"  # while <root>/hold exists, held_run waits


def held_run(config: DictConfig, run_dir: Path) -> dict[str, float]:
    """A run that records its start as record_run does and finishes once the file ``hold`` in the run store's root is
    gone (a test's way to keep runs in flight for as long as it needs; at most 5 minutes)."""
    append_line(run_dir / EXECUTIONS, str(os.getpid()))
    hold, deadline = run_dir.parents[2] / HOLD, time.monotonic() + 300
    while hold.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return {"val/scaled_accuracy": 0.5, "test/scaled_accuracy": 0.25}
