"""A SLURM sweep's placement checked in --dry-run as before a submission (tasks = GPUs = the run's processes per node,
nodes = trainer.num_nodes, memory per process), and the dry run's SLURM plan: nodes x GPUs, the wall time of each run
against the time limit, and the requeues it implies."""

import io
import math
import re

import pytest
from rich.console import Console

from experiments.config.artifacts import load_artifact
from experiments.sweeps.compute_estimate import Accelerator
from experiments.sweeps.launcher_plan import (
    MIN_MEMORY_PER_PROCESS_GB,
    check_processes,
    memory_gb,
    print_launcher_plan,
    requeues,
    signal_lead_seconds,
)
from experiments.sweeps.sweep import load_launcher
from experiments.sweeps.sweep import main as sweep_main

PAPER = [
    "+trainer.num_nodes=8",
    "hydra.launcher.nodes=8",
    "hydra.launcher.tasks_per_node=8",
    "hydra.launcher.gpus_per_node=8",
]


@pytest.fixture(scope="module")
def paper_runs():
    """Table 1's 15 runs at paper scale on 8 nodes (planned once: seconds)."""
    return load_artifact("spaj15b_model_results").runs("paper", ["+trainer.num_nodes=8"])


def test_a_dry_run_refuses_a_launcher_that_does_not_place_the_runs_processes(capsys):
    """--dry-run checked nothing of the launcher (nodes=3 tasks_per_node=5 exited 0)."""
    arguments = [
        "spaj15b_model_results",
        "--scale",
        "paper",
        "--launcher",
        "slurm",
        "--dry-run",
        *PAPER,
        "hydra.launcher.nodes=3",
        "hydra.launcher.tasks_per_node=5",
    ]
    assert sweep_main(arguments) == 2
    error = " ".join(capsys.readouterr().err.split())
    assert (
        error.startswith("xlstm-suite sweep: error: run ")
        and (
            "trains on trainer.devices=8 processes on each of trainer.num_nodes=8 nodes, but the launcher starts "
            "tasks_per_node=5 on each of nodes=3; set hydra.launcher.tasks_per_node=8 hydra.launcher.gpus_per_node=8 "
            "hydra.launcher.nodes=8"
        )
        in error
    ), error


@pytest.mark.parametrize(
    "overrides, message",
    [
        (
            ["hydra.launcher.gpus_per_node=1"],  # the default left in place: 8 tasks share one GPU
            "trains one process per GPU (trainer.accelerator=gpu) on tasks_per_node=8, but the launcher asks for "
            "gpus_per_node=1; set hydra.launcher.gpus_per_node=8",
        ),
        (
            ["hydra.launcher.mem_per_gpu=null", "hydra.launcher.mem_gb=64"],
            f"mem_gb=64 GB on a node leaves 8 GB to each of its tasks_per_node=8 processes, less than "
            f"{MIN_MEMORY_PER_PROCESS_GB} GB; set hydra.launcher.mem_gb={8 * MIN_MEMORY_PER_PROCESS_GB} or more",
        ),
        (["hydra.launcher.mem_gb=512"], "the launcher sets both mem_gb=512 and mem_per_gpu=64G"),
        (["hydra.launcher.nodes=1"], "but the launcher starts tasks_per_node=8 on each of nodes=1"),
    ],
    ids=["gpus per node", "memory per process", "two memory settings", "nodes"],
)
@pytest.mark.slow  # plans Table 1's runs at paper scale (the dry run's test above does too)
def test_a_launcher_that_does_not_place_the_runs_processes_is_named_before_anything_is_submitted(
    paper_runs, overrides, message
):
    with pytest.raises(ValueError) as refused:
        check_processes(paper_runs, load_launcher("slurm", [*PAPER[1:], *overrides])["hydra_launcher"])
    assert message in str(refused.value)
    check_processes(paper_runs, load_launcher("slurm", PAPER[1:])["hydra_launcher"])  # the README's placement


@pytest.mark.slow  # the estimate builds each of the 14 models (on the meta device)
def test_the_slurm_plan_of_table_1_gives_each_runs_nodes_gpus_wall_time_and_requeues(paper_runs):
    launcher = load_launcher("slurm", [*PAPER[1:], "hydra.launcher.timeout_min=1440"])["hydra_launcher"]
    console = Console(file=io.StringIO(), width=200)
    print_launcher_plan(console, paper_runs, launcher, Accelerator())
    output = console.file.getvalue()
    assert "SLURM: each run a job of 8 nodes x 8 GPUs, time limit 24 h" in output
    rows = re.findall(r"^ *(\w+) +(\d+) +8 x 8 +([\d.e+]+) +([\d.e+]+) +(\d+)$", output, re.MULTILINE)
    assert len(rows) == 14 and sum(int(runs) for _, runs, *_ in rows) == 15  # a row per model, RWKV-6's two in one
    for model, _, gpu_hours, wall_hours, requeue_count in rows:
        assert float(wall_hours) == pytest.approx(float(gpu_hours) / 64, rel=0.01), model
        assert int(requeue_count) == requeues(float(wall_hours), 24, signal_lead_seconds(launcher) / 3600)
    assert "15 runs: one array of 15 jobs, at most 15 at once (960 GPUs)" in " ".join(output.split())


def test_requeues_count_the_attempts_beyond_the_first_at_the_time_limit_less_the_signals_lead():
    lead = 120 / 3600
    assert requeues(10.0, 24, lead) == 0
    assert requeues(24 - lead, 24, lead) == 0  # fits one attempt exactly
    assert requeues(24.0, 24, lead) == 1
    assert requeues(114.0, 24, lead) == math.ceil(114 / (24 - lead)) - 1 == 4  # temp_sclaw300B's 1.3B at 64 GPUs


def test_memory_sizes_read_as_slurm_writes_them():
    assert [memory_gb(size) for size in ("64G", "64GB", "65536M", "65536", "1T")] == [64, 64, 64, 64, 1024]
    with pytest.raises(ValueError, match="mem_per_gpu='lots' is not a memory size"):
        memory_gb("lots")
