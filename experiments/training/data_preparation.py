"""``xlstm-suite prepare <artifact> --scale S [--where KEY=VALUE ...] [overrides]``: the data of a sweep's runs made
once, before any of them trains. Each distinct task config among the runs has its datamodule prepare its data (a
language model's token cache, tokenised under the entry's exclusive lock: tasks.lm.token_cache), so that the sweep's
GPU jobs only open it and check it once per job, where each node's first process would otherwise tokenise the same
corpus while its GPUs wait. On a cluster, as a CPU job of its own, e.g.
``sbatch --partition=<cpu partition> --cpus-per-task=32 --time=1-0 --wrap ".venv/bin/xlstm-suite prepare ..."``.
``--dry-run`` lists the task configs and their runs, and makes nothing.
"""

import time
from collections.abc import Sequence

from omegaconf import OmegaConf
from rich.console import Console

from experiments.config.artifacts import PlannedRun


def distinct_tasks(runs: Sequence[PlannedRun]) -> list[PlannedRun]:
    """One run of each distinct task config among the available runs (their data is the same)."""
    by_task = {}
    for run in runs:
        if run.unavailable is None:
            by_task.setdefault(OmegaConf.to_yaml(run.config.task, resolve=True), run)
    return list(by_task.values())


def task_description(run: PlannedRun, runs: Sequence[PlannedRun]) -> str:
    """``task lm_sample (lm, corpus offline:sample) of 2 runs``."""
    task = run.config.task
    same = sum(other.unavailable is None and other.config.task == task for other in runs)
    corpus = f", corpus {task.corpus}" if "corpus" in task else ""
    return f"task {task.name} ({task.family}{corpus}) of {same} runs"


def print_preparation(runs: Sequence[PlannedRun], console: Console) -> int:
    """--dry-run: the task configs whose data prepare_data would make, each with its runs; their number."""
    tasks = distinct_tasks(runs)
    for run in tasks:
        console.print(f"would prepare the data of {task_description(run, runs)}", highlight=False, soft_wrap=True)
    return len(tasks)


def prepare_data(runs: Sequence[PlannedRun], console: Console) -> int:
    """Prepare the data of every distinct task of ``runs``, one line each; the number of task configs prepared."""
    from experiments.training.data import build_datamodule  # Lightning: only to make data

    prepared = distinct_tasks(runs)
    for run in prepared:
        started = time.perf_counter()
        build_datamodule(run.config.task, run.config.trainer.batch_size).prepare_data()
        console.print(
            f"prepared the data of {task_description(run, runs)} in {time.perf_counter() - started:.1f} s",
            highlight=False,
            soft_wrap=True,
        )
    console.print(f"{len(prepared)} task configs of {len(runs)} runs prepared", highlight=False)
    return len(prepared)
