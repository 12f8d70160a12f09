"""A submitit sweep's placement, checked before anything is submitted and in ``--dry-run``, and the SLURM plan a dry
run prints.

Each SLURM task of a job is one of its run's Lightning processes, one per GPU: the launcher's tasks_per_node must be
the run's trainer.devices, its gpus_per_node the same for a run on GPUs (none for a CPU run), its nodes the run's
trainer.num_nodes, and the memory of a node must hold its processes. The plan: per model, the nodes x GPUs of a run,
the wall time its estimated GPU-hours (experiments.sweeps.compute_estimate) take on them, against the job's time
limit less the lead of SLURM's requeue signal, and the requeues that implies (each attempt trains until the signal,
then requeues and resumes from its checkpoint).
"""

import math
import re
from collections.abc import Sequence

from omegaconf import OmegaConf
from rich import box
from rich.console import Console
from rich.table import Table

from experiments.config.artifacts import PlannedRun
from experiments.sweeps.compute_estimate import Accelerator, run_compute

GPU_ACCELERATORS = ("gpu", "cuda")
# A node's memory for each of its processes, at least: a CUDA process with torch holds a few GB, and rank 0 gathers
# the whole model with its AdamW state to save a checkpoint (1.3B parameters: 16 GB).
MIN_MEMORY_PER_PROCESS_GB = 16
MEMORY_UNITS_GB = {"K": 1 / 1024**2, "M": 1 / 1024, "G": 1.0, "T": 1024.0}  # SLURM's suffixes; none is M
DEFAULT_SIGNAL_LEAD_SECONDS = 0


def trainer_placement(run: PlannedRun) -> tuple:
    """(trainer.devices, trainer.num_nodes, trainer.accelerator) of a run."""
    return (
        OmegaConf.select(run.config, "trainer.devices", default=1),
        OmegaConf.select(run.config, "trainer.num_nodes", default=1),
        OmegaConf.select(run.config, "trainer.accelerator", default="auto"),
    )


def check_processes(runs: Sequence[PlannedRun], hydra_launcher: dict) -> None:
    """ValueError naming every mismatch between the runs' processes and the launcher's tasks, GPUs and memory, before
    anything is submitted (runs that are not available are left out)."""
    problems = launcher_problems([run for run in runs if run.unavailable is None], hydra_launcher)
    if problems:
        raise ValueError("; ".join(problems))


def launcher_problems(runs: Sequence[PlannedRun], hydra_launcher: dict) -> list[str]:
    tasks, nodes = hydra_launcher.get("tasks_per_node", 1), hydra_launcher.get("nodes", 1)
    gpus = hydra_launcher.get("gpus_per_node") or 0
    problems = []
    for run in {trainer_placement(run): run for run in runs}.values():  # one run of each placement
        devices, num_nodes, accelerator = trainer_placement(run)
        if (devices, num_nodes) != (tasks, nodes):
            problems.append(
                f"run {run.run_id} ({run.cell}) trains on trainer.devices={devices} processes on each of "
                f"trainer.num_nodes={num_nodes} nodes, but the launcher starts tasks_per_node={tasks} on each of "
                f"nodes={nodes}; set hydra.launcher.tasks_per_node={devices} hydra.launcher.gpus_per_node={devices} "
                f"hydra.launcher.nodes={num_nodes}, or the runs' trainer.devices and +trainer.num_nodes"
            )
        elif accelerator in GPU_ACCELERATORS and gpus != tasks:
            problems.append(
                f"run {run.run_id} ({run.cell}) trains one process per GPU (trainer.accelerator="
                f"{accelerator}) on tasks_per_node={tasks}, but the launcher asks for gpus_per_node={gpus}; "
                f"set hydra.launcher.gpus_per_node={tasks}"
            )
        elif accelerator == "cpu" and gpus:
            problems.append(
                f"run {run.run_id} ({run.cell}) trains on CPUs (trainer.accelerator=cpu), but the launcher "
                f"asks for gpus_per_node={gpus}; set hydra.launcher.gpus_per_node=0"
            )
    return problems + memory_problems(hydra_launcher, tasks)


def memory_problems(hydra_launcher: dict, tasks: int) -> list[str]:
    """The node's memory (mem_gb) or each GPU's (mem_per_gpu) must give every process MIN_MEMORY_PER_PROCESS_GB."""
    per_node, per_gpu = hydra_launcher.get("mem_gb"), hydra_launcher.get("mem_per_gpu")
    if per_node is not None and per_gpu is not None:
        return [
            f"the launcher sets both mem_gb={per_node} and mem_per_gpu={per_gpu} (SLURM takes one of --mem and "
            "--mem-per-gpu); set the other to null"
        ]
    if per_node is not None and per_node / max(tasks, 1) < MIN_MEMORY_PER_PROCESS_GB:
        return [
            f"mem_gb={per_node} GB on a node leaves {per_node / tasks:g} GB to each of its tasks_per_node={tasks} "
            f"processes, less than {MIN_MEMORY_PER_PROCESS_GB} GB; set hydra.launcher.mem_gb="
            f"{MIN_MEMORY_PER_PROCESS_GB * tasks} or more"
        ]
    if per_gpu is not None and memory_gb(per_gpu) < MIN_MEMORY_PER_PROCESS_GB:
        return [
            f"mem_per_gpu={per_gpu} is less than {MIN_MEMORY_PER_PROCESS_GB} GB for the process of each GPU; set "
            f"hydra.launcher.mem_per_gpu={MIN_MEMORY_PER_PROCESS_GB}G or more"
        ]
    return []


def memory_gb(value) -> float:
    """SLURM's memory size (a number of MB, or with a suffix K, M, G or T, e.g. 64G) in GB; ValueError otherwise."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMGT]?)B?", str(value).strip(), re.IGNORECASE)
    if match is None:
        raise ValueError(f"mem_per_gpu={value!r} is not a memory size (e.g. 64G, 65536M)")
    return float(match[1]) * MEMORY_UNITS_GB[(match[2] or "M").upper()]


def signal_lead_seconds(hydra_launcher: dict) -> int:
    """How long before the time limit SLURM sends the requeue signal (``signal: USR1@120``): 120."""
    signal = str((hydra_launcher.get("additional_parameters") or {}).get("signal", ""))
    return int(signal.rpartition("@")[2]) if re.fullmatch(r"\w+@\d+", signal) else DEFAULT_SIGNAL_LEAD_SECONDS


def requeues(wall_hours: float, limit_hours: float, lead_hours: float) -> int:
    """The requeues a run of ``wall_hours`` takes when each attempt trains for the time limit less the signal's lead
    (the time lost to restarts and to the steps since the saved one not counted)."""
    return max(0, math.ceil(wall_hours / (limit_hours - lead_hours)) - 1)


def print_launcher_plan(
    console: Console, runs: Sequence[PlannedRun], hydra_launcher: dict, accelerator: Accelerator
) -> None:
    """Per model: the runs, the nodes x GPUs of each, its GPU-hours, its wall time on them and the requeues at the
    time limit; then the array's size. For --dry-run with the slurm launcher."""
    runs = [run for run in runs if run.unavailable is None]
    nodes, gpus = hydra_launcher.get("nodes", 1), hydra_launcher.get("gpus_per_node") or 0
    devices = nodes * max(gpus, 1)
    limit_hours = hydra_launcher.get("timeout_min", 60) / 60
    lead_hours = signal_lead_seconds(hydra_launcher) / 3600
    by_model: dict[str, list[float]] = {}
    for run in runs:
        compute = run_compute(run.config)
        if compute.flops is not None:  # a task without a sequence length has no estimate (the plan above says so)
            by_model.setdefault(str(run.cell.get("model", run.label)), []).append(
                accelerator.gpu_hours(compute.flops, compute.model)
            )
    table = Table(
        title=f"SLURM: each run a job of {counted(nodes, 'node')} x {counted(gpus, 'GPU')}, time limit "
        f"{limit_hours:g} h",
        caption=f"GPU-h: on {accelerator.describe()}; wall time: the GPU-hours over the job's "
        f"{counted(devices, 'GPU' if gpus else 'process')}; requeues: at the time limit less the "
        f"{lead_hours * 3600:g} s lead of the requeue signal",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        show_edge=False,
        collapse_padding=True,
    )
    for column in ("model", "runs", "nodes x GPUs", "GPU-h per run", "wall h per run", "requeues per run"):
        table.add_column(column, justify="left" if column == "model" else "right", no_wrap=True)
    for model, hours in by_model.items():
        longest = max(hours) / devices
        table.add_row(
            model,
            str(len(hours)),
            f"{nodes} x {gpus}",
            f"{max(hours):.3g}",
            f"{longest:.3g}",
            str(requeues(longest, limit_hours, lead_hours)),
        )
    console.print(table)
    longest = max((max(hours) for hours in by_model.values()), default=0.0) / devices
    parallel = min(len(runs), hydra_launcher.get("array_parallelism", len(runs)) or len(runs))
    console.print(
        f"{len(runs)} runs: one array of {len(runs)} jobs, at most {parallel} at once "
        f"({counted(parallel * devices, 'GPU' if gpus else 'process')}); the longest run takes "
        f"{longest:.3g} h of wall time: {requeues(longest, limit_hours, lead_hours)} requeues at the "
        f"{limit_hours:g} h limit",
        highlight=False,
        soft_wrap=True,
    )


def counted(count: int, noun: str) -> str:
    """``8 GPUs``, ``1 node``, ``2 processes``."""
    return f"{count} {noun}" + ("" if count == 1 else "es" if noun.endswith("s") else "s")
