"""Run functions for the fake-SLURM tests (tests/experiments/sweeps/test_slurm.py), used through their dotted paths as a sweep's run
function. Each appends a line to ``attempts.log`` in its run directory per rank and attempt:
``<rank> <SLURM_RESTART_COUNT> <first step> <pid>``.

``gloo_run`` trains a linear regression data-parallel on every task of its SLURM job (torch.distributed's gloo, the
rendezvous of Lightning's SLURM environment: the first node, port 15000 + the job id's last four digits): each step a
forward and backward per rank on a (seed, step, rank) batch, the gradients all-reduced, an SGD step. It stops for SLURM's
requeue as training does (experiments.stop_signals: every rank asks at each step boundary, they save the state
together, rank 0 writes it) and resumes from that state. The environment (which a sweep's jobs inherit) injects
SLURM's warning: USR1_VARIABLE=<rank>:<step>:<backward|preparation> sends SIGUSR1 to that rank itself in its first
attempt, inside the backward pass of that step or while it prepares its data (before its first step);
STEP_SECONDS_VARIABLE slows each step, PREPARATION_SECONDS_VARIABLE makes its data preparation last that long. ``reference_weights`` computes the same training in one process, without
interruption. ``dying_run`` is sweep_fakes' record_run, except that the process of a run of the model that
EXIT_MODEL_VARIABLE names kills itself (as the out-of-memory killer would), leaving the run's config and id as they
are.
"""

import os
import signal
import time
from pathlib import Path

from omegaconf import DictConfig

from experiments.stop_signals import agree_to_requeue, stopping_for_requeue
from tests.sweep_fakes import EXECUTIONS, append_line, record_run

ATTEMPTS = "attempts.log"
USR1_VARIABLE = "XLSTM_SUITE_TEST_USR1"
EXIT_MODEL_VARIABLE = "XLSTM_SUITE_TEST_EXIT_MODEL"
DYING_RUN = "tests.slurm_runs.dying_run"
STEP_SECONDS_VARIABLE = "XLSTM_SUITE_TEST_STEP_SECONDS"
PREPARATION_SECONDS_VARIABLE = "XLSTM_SUITE_TEST_PREPARATION_SECONDS"
STATE = "state.pt"
FEATURES = 4
LEARNING_RATE = 0.1


def dying_run(config: DictConfig, run_dir: Path) -> dict[str, float]:
    if os.environ.get(EXIT_MODEL_VARIABLE) == config.model.name:
        append_line(run_dir / EXECUTIONS, str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)
    return record_run(config, run_dir)


def record_attempt(run_dir: Path, rank: int, step: int) -> None:
    with open(run_dir / ATTEMPTS, "a") as log:
        log.write(f"{rank} {os.environ.get('SLURM_RESTART_COUNT', '0')} {step} {os.getpid()}\n")


def attempts(run_dir: Path) -> list[tuple[int, int, int]]:
    """(rank, restart count, first step) of every attempt of every rank, in the order they started."""
    lines = (run_dir / ATTEMPTS).read_text().splitlines() if (run_dir / ATTEMPTS).exists() else []
    return [tuple(int(field) for field in line.split()[:3]) for line in lines]


def batch(seed: int, step: int, rank: int):
    """The (inputs, targets) of a rank at a step: 8 samples of a fixed linear map plus noise."""
    import torch

    generator = torch.Generator().manual_seed(seed * 1_000_003 + step * 1_009 + rank)
    inputs = torch.randn(8, FEATURES, generator=generator)
    targets = inputs @ torch.arange(1.0, FEATURES + 1) + 0.1 * torch.randn(8, generator=generator)
    return inputs, targets


def reference_weights(seed: int, steps: int, world_size: int):
    """The weights gloo_run ends with, trained in this process without interruption."""
    import torch

    weights = torch.zeros(FEATURES)
    for step in range(steps):
        gradients = []
        for rank in range(world_size):
            inputs, targets = batch(seed, step, rank)
            gradients.append(2 * inputs.T @ (inputs @ weights - targets) / len(targets))
        weights = weights - LEARNING_RATE * torch.stack(gradients).mean(0)
    return weights


def gloo_run(config: DictConfig, run_dir: Path) -> dict[str, float]:
    import torch
    import torch.distributed as distributed

    rank, world_size = int(os.environ["SLURM_PROCID"]), int(os.environ["SLURM_NTASKS"])
    usr1_rank, usr1_step, during = (os.environ.get(USR1_VARIABLE) or "-1:0:none").split(":")
    signalled = "SLURM_RESTART_COUNT" not in os.environ and int(usr1_rank) == rank  # its first attempt
    step_seconds = float(os.environ.get(STEP_SECONDS_VARIABLE, "0"))
    if signalled and during == "preparation":
        os.kill(os.getpid(), signal.SIGUSR1)  # while it "prepares its data": noted, acted on at the first boundary
    time.sleep(float(os.environ.get(PREPARATION_SECONDS_VARIABLE, "0")))
    distributed.init_process_group(
        "gloo",
        init_method=f"tcp://localhost:{15000 + int(os.environ['SLURM_JOB_ID'][-4:])}",
        rank=rank,
        world_size=world_size,
    )
    state = torch.load(run_dir / STATE) if (run_dir / STATE).exists() else {"step": 0, "weights": torch.zeros(FEATURES)}
    weights = state["weights"].clone().requires_grad_(True)
    record_attempt(run_dir, rank, state["step"])
    steps = config.trainer.max_steps
    for step in range(state["step"], steps):
        hook = None
        if signalled and during == "backward" and step == int(usr1_step):
            hook = weights.register_hook(lambda gradient: os.kill(os.getpid(), signal.SIGUSR1) or gradient)
        inputs, targets = batch(config.seed, step, rank)
        loss = ((inputs @ weights - targets) ** 2).mean()
        loss.backward()
        if hook is not None:
            hook.remove()
        with torch.no_grad():
            distributed.all_reduce(weights.grad)
            weights -= LEARNING_RATE * weights.grad / world_size
            weights.grad = None
        time.sleep(step_seconds)
        if step + 1 < steps and agree_to_requeue(lambda requested: any_rank(requested)):
            if rank == 0:
                torch.save({"step": step + 1, "weights": weights.detach()}, run_dir / STATE)
            distributed.barrier()  # saved before anyone requeues
            raise stopping_for_requeue()
    result = {"val/scaled_accuracy": 0.5, "test/scaled_accuracy": 0.25, "train/steps": float(steps)}
    return result | {f"weight/{index}": float(value) for index, value in enumerate(weights.detach())}


def any_rank(requested: bool) -> bool:
    import torch
    import torch.distributed as distributed

    flag = torch.tensor([int(requested)])
    distributed.all_reduce(flag, op=distributed.ReduceOp.MAX)
    return bool(flag.item())
