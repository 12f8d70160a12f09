"""The sweep runner: plan an artifact's runs at one scale, skip finished ones, run the rest locally or on SLURM.

``xlstm-suite sweep formal-main --scale mini [--launcher local|slurm|submitit_local] [--jobs N] [--dry-run]
[--no-wait] [--where KEY=VALUE ...] [overrides]`` (``--dry-run`` estimates tokens, FLOPs and GPU-hours at
``--gpu-tflops`` and ``--utilization``, and with a submitit launcher checks its placement, and prints the SLURM plan;
``--where`` keeps the runs of part of the grid, experiments.sweeps.run_subset; ``--no-wait`` submits the SLURM jobs
and exits, experiments.sweeps.slurm_sweep)
"""

import argparse
import importlib.util
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from omegaconf import OmegaConf
from rich.console import Console

from experiments.config.arguments import add_overrides_argument, add_scale_argument
from experiments.config.artifacts import Artifact, PlannedRun, check_scale, load_artifact, override_value
from experiments.config.configuration import CONFIGS, group_choices, load_yaml
from experiments.paths import REPOSITORY_ROOT, checked_folder
from experiments.stop_signals import Stopped, stop_signals_raise
from experiments.sweeps.claims import DEFAULT_STALE_AFTER_SECONDS, claim_is_live
from experiments.sweeps.compute_estimate import MEASURED_THROUGHPUT, Accelerator, command_line_accelerator
from experiments.sweeps.launcher_plan import check_processes, print_launcher_plan
from experiments.sweeps.local_launcher import run_locally
from experiments.sweeps.manifest import Manifest, launch_directory, write_manifest
from experiments.sweeps.run_execution import DEFAULT_RUN_FUNCTION, describe_os_error, skipped_outcome
from experiments.sweeps.run_outcome import RunOutcome
from experiments.sweeps.run_store import (
    ERROR_FILE,
    RUN_STORE,
    divergence_note,
    failure_message,
    finished_result,
    run_directory,
    run_status,
)
from experiments.sweeps.run_subset import parse_where, runs_where
from experiments.sweeps.shared_runs import copy_shared_runs
from experiments.sweeps.slurm_sweep import (
    POLL_SECONDS,
    TrackedRun,
    is_slurm,
    jobs_in_queue,
    print_queued,
    print_submitted,
    queued_outcomes,
    run_on_slurm,
)
from experiments.sweeps.status import committed_results_note, print_plan, print_summary
from experiments.sweeps.training_runs import training_run_problem, training_sweep_command
from experiments.sweeps.worker_allocator import chosen_allocator

HYDRA_LAUNCHERS = {"SlurmLauncher": "submitit_slurm", "LocalLauncher": "submitit_local"}
LAUNCHER_OVERRIDE = "hydra.launcher."


# --- the sweep ----------------------------------------------------------------------------------------------------


def run_sweep(
    artifact: str | Artifact,
    scale: str,
    launcher: str = "local",
    jobs: int | None = None,
    dry_run: bool = False,
    verbose: bool = False,
    overrides: Sequence[str] = (),
    run_function: str = DEFAULT_RUN_FUNCTION,
    root: Path = RUN_STORE,
    stale_after_seconds: float = DEFAULT_STALE_AFTER_SECONDS,
    console: Console | None = None,
    accelerator: Accelerator = Accelerator(),
    where: Sequence[str] = (),
    wait: bool = True,
    poll_seconds: float = POLL_SECONDS,
) -> int:
    """Plan, then run what is not done; the exit code is non-zero if a run failed. Bad input raises ValueError.
    ``accelerator``: the GPU and utilisation a dry run's GPU-hours assume; ``where``: KEY=VALUE pairs, only the runs
    of the cells that have them (experiments.sweeps.run_subset); ``wait`` False: the slurm launcher submits and
    exits (``xlstm-suite status`` collects the runs), else it asks SLURM every ``poll_seconds``. A stop signal
    (SIGTERM, SIGINT) stops the workers, whose runs record it and stay resumable (SLURM jobs stay queued), and ends the
    sweep with one line and exit code 128 + the signal's number."""
    console = console or Console()
    with stop_signals_raise():
        try:
            return plan_and_run(
                artifact,
                scale,
                launcher,
                jobs,
                dry_run,
                verbose,
                overrides,
                run_function,
                root,
                stale_after_seconds,
                console,
                accelerator,
                where,
                wait,
                poll_seconds,
            )
        except Stopped as stopped:
            if launcher == "slurm":
                console.print(
                    f"[yellow]stopped by {stopped.name}[/]: stopped waiting; the submitted SLURM jobs stay "
                    f"queued or running, `{status_command_line(artifact, scale, overrides, where)}` collects "
                    "them, and a rerun of this sweep submits none of them again",
                    soft_wrap=True,
                )
            else:
                console.print(
                    f"[yellow]stopped by {stopped.name}[/]: the runs in flight recorded it in their "
                    "error.json and resume from their last checkpoints; rerun the same command to continue, "
                    "finished runs are kept",
                    soft_wrap=True,
                )
            return stopped.exit_code


def status_command_line(artifact: str | Artifact, scale: str, overrides: Sequence[str], where: Sequence[str]) -> str:
    """The `xlstm-suite status` command of a sweep (its runs' jobs, collected)."""
    name = artifact.name if isinstance(artifact, Artifact) else artifact
    runs_overrides = [override for override in overrides if not override.startswith(LAUNCHER_OVERRIDE)]
    return " ".join(
        [
            "xlstm-suite status",
            name,
            "--scale",
            scale,
            *(f"--where {shlex.quote(pair)}" for pair in where),
            *map(shlex.quote, runs_overrides),
        ]
    )


def plan_and_run(
    artifact: str | Artifact,
    scale: str,
    launcher: str,
    jobs: int | None,
    dry_run: bool,
    verbose: bool,
    overrides: Sequence[str],
    run_function: str,
    root: Path,
    stale_after_seconds: float,
    console: Console,
    accelerator: Accelerator,
    where: Sequence[str],
    wait: bool = True,
    poll_seconds: float = POLL_SECONDS,
) -> int:
    """run_sweep's work."""
    root = checked_folder(root, "--root")
    artifact = artifact if isinstance(artifact, Artifact) else load_artifact(artifact)
    check_scale(scale)
    status = status_command_line(artifact, scale, overrides, where)
    overrides, launcher_overrides = split_overrides(overrides)
    launcher_config = load_launcher(launcher, launcher_overrides)
    hydra_launcher = launcher_config.get("hydra_launcher")
    jobs = check_jobs(jobs if jobs is not None else launcher_config.get("jobs", 1), console)
    check_run_function(run_function)
    allocator = chosen_allocator()
    root = Path(root).resolve()
    subset = parse_where(where)
    runs = artifact.runs(scale, overrides)
    grid_size = len(runs)
    if subset:
        runs = runs_where(runs, subset)
    if hydra_launcher is not None:
        check_processes(runs, hydra_launcher)
    if dry_run:
        print_plan(console, artifact, scale, runs, root, stale_after_seconds, verbose, accelerator, overrides)
        copy_shared_runs(artifact, scale, overrides, runs, root, console, dry_run=True)
        if is_slurm(hydra_launcher):
            print_launcher_plan(console, runs, hydra_launcher, accelerator)
        return 0
    pending = [run for run in runs if run.unavailable is None and finished_result(run_directory(run, root)) is None]
    if pending and artifact.shares_runs:
        check_store_writable(root)
        copied = copy_shared_runs(artifact, scale, overrides, pending, root, console)
        pending = [run for run in pending if run.run_id not in copied]
    waiting = waiting_for_training(pending, root, overrides, artifact.evaluates_of(scale).get("where"))
    pending = [run for run in pending if run.run_id not in waiting]
    queued = jobs_in_queue(pending, root, console)  # submitted before and still queued or running: never again
    pending = [run for run in pending if run.run_id not in queued]
    console.print(
        f"[bold]{artifact.name}[/] ({scale}): {len(runs)} runs planned"
        + (f" (--where: {len(runs)} of the grid's {grid_size})" if subset else "")
        + f", {len(pending)} to run"
        + (f", {len(waiting)} waiting for their training runs" if waiting else "")
        + (f", {len(queued)} queued or running as SLURM jobs" if queued else "")
    )
    print_waiting(console, waiting)
    print_queued(console, queued, status)
    if (note := committed_results_note(artifact.name, scale, pending, root, overrides)) is not None:
        console.print(note, highlight=False, soft_wrap=True, markup=False)
    if pending:
        check_store_writable(root)

    def launch(batch: list[PlannedRun], queued_jobs: Sequence[TrackedRun] = ()) -> list[tuple[PlannedRun, RunOutcome]]:
        if is_slurm(hydra_launcher):
            return run_on_slurm(
                batch,
                list(queued_jobs),
                hydra_launcher,
                root,
                run_function,
                stale_after_seconds,
                console,
                wait,
                poll_seconds,
            )
        if hydra_launcher is not None:
            outcomes = run_with_submitit(batch, hydra_launcher, root, run_function, stale_after_seconds, console)
        else:
            outcomes = run_locally(batch, root, run_function, jobs, stale_after_seconds, console, allocator)
        return outcomes + queued_outcomes(queued_jobs, root)  # SLURM's to run: this launcher does not wait for them

    outcomes = launch(pending, list(queued.values()))
    while claimed := [run for run, outcome in outcomes if outcome.status == "claimed"]:
        freed = wait_for_claims(claimed, root, stale_after_seconds, console)
        freed_ids = {run.run_id for run in freed}
        rerun = [run for run in freed if finished_result(run_directory(run, root)) is None]  # not done by its holder
        outcomes = (
            [(run, outcome) for run, outcome in outcomes if run.run_id not in freed_ids]
            + [(run, RunOutcome("already done", run_directory(run, root))) for run in freed if run not in rerun]
            + launch(rerun)
        )
    if is_slurm(hydra_launcher) and not wait:
        print_submitted(console, outcomes, status)
        return 0
    launched = {run.run_id for run, _ in outcomes}
    not_started = [run for run in pending if run.run_id not in launched]
    print_summary(console, artifact, scale, runs, outcomes, not_started, waiting=list(waiting))
    if not_started:
        fault = next(outcome.store_error for _, outcome in outcomes if outcome.stops_the_sweep)
        console.print(
            f"[red]stopped[/]: the run store cannot be written ({describe_os_error(fault)}); "
            f"{len(not_started)} runs not started. Free space or make it writable, then rerun the same command.",
            soft_wrap=True,
        )
    return 1 if not_started or any(outcome.status == "failed" for _, outcome in outcomes) else 0


def waiting_for_training(
    runs: list[PlannedRun], root: Path, overrides: Sequence[str] = (), where: Mapping | None = None
) -> dict[str, tuple[str, str]]:
    """Run id -> (why its training run is not ready, the command that makes it, with the sweep's ``overrides`` and
    the artifact's ``evaluates.where``), for the evaluation runs among ``runs`` that must wait: neither run nor
    failed, a later sweep runs them once their training runs are done."""
    waiting = {}
    for run in runs:
        evaluate = run.config.get("evaluate")
        problem = training_run_problem(evaluate, root) if evaluate is not None else None
        if problem:
            waiting[run.run_id] = (
                problem,
                training_sweep_command(evaluate["artifact"], evaluate["scale"], overrides, where),
            )
    return waiting


def print_waiting(console: Console, waiting: dict[str, tuple[str, str]]) -> None:
    """Each training run that evaluation runs wait for, once, then the commands that make them."""
    problems = dict.fromkeys(problem for problem, _ in waiting.values())
    for problem in problems:
        console.print(f"  waiting: {problem}", highlight=False, soft_wrap=True, markup=False)
    if waiting:
        commands = " and ".join(f"`{command}`" for command in sorted({command for _, command in waiting.values()}))
        console.print(
            f"{len(waiting)} evaluation runs wait for {len(problems)} training runs: make them with "
            f"{commands}, then rerun this sweep",
            highlight=False,
            soft_wrap=True,
            markup=False,
        )


class StoreNotWritable(Exception):
    """The run store cannot take a single file: nothing could run."""


def check_store_writable(root: Path) -> None:
    """Create the store and a file in it (then remove the file), so that a read-only store fails in one line."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=root):
            pass
    except OSError as error:
        raise StoreNotWritable(f"the run store {root} cannot be written: {describe_os_error(error)}") from error


def wait_for_claims(
    claimed: list[PlannedRun], root: Path, stale_after_seconds: float, console: Console
) -> list[PlannedRun]:
    """Wait while other workers hold these runs; return those whose claim is released or stale (its holder died, or
    its heartbeat stopped), to be run or skipped as the store then says. A live holder's heartbeat keeps us waiting."""
    poll_seconds = min(5.0, stale_after_seconds / 5)
    details = {skipped_outcome(run_directory(run, root)).detail for run in claimed}
    holders = ", ".join(sorted(detail for detail in details if detail))  # a claim released meanwhile has none
    console.print(
        f"waiting for {len(claimed)} runs that other workers hold ({holders}); Ctrl-C stops waiting, "
        "the runs stay theirs",
        soft_wrap=True,
    )
    while True:
        freed = [run for run in claimed if not claim_is_live(run_directory(run, root), stale_after_seconds)]
        if freed:
            return freed
        time.sleep(poll_seconds)


def split_overrides(overrides: Sequence[str]) -> tuple[list[str], list[str]]:
    """(the runs' overrides, the launcher's): ``hydra.launcher.<key>=<value>`` sets a key of the submitit launcher
    (nodes, partition, ...), as in Hydra's own command line; every other override is the runs'."""
    launcher = [override for override in overrides if override.startswith(LAUNCHER_OVERRIDE)]
    return [override for override in overrides if override not in launcher], launcher


def load_launcher(name: str, overrides: Sequence[str] = ()) -> dict:
    """configs/launcher/<name>.yaml: ``jobs`` (local pool) or ``hydra_launcher`` (parameters of a submitit launcher),
    with ``hydra.launcher.<key>=<value>`` overrides applied to the latter."""
    if name not in group_choices("launcher"):
        raise ValueError(f"unknown launcher {name!r}; valid choices: {group_choices('launcher')}")
    launcher = OmegaConf.to_container(load_yaml(CONFIGS / "launcher" / f"{name}.yaml"), resolve=False)
    target = launcher.get("hydra_launcher", {}).get("_target_", "SlurmLauncher")
    if target.rsplit(".", 1)[-1] not in HYDRA_LAUNCHERS:
        raise ValueError(
            f"launcher {name!r}: unknown Hydra launcher {target!r}; valid classes: {sorted(HYDRA_LAUNCHERS)}"
        )
    if overrides:
        if "hydra_launcher" not in launcher:
            raise ValueError(
                f"launcher {name!r} is not a submitit launcher; {list(overrides)} apply to slurm or submitit_local only"
            )
        changes = OmegaConf.from_dotlist([override.removeprefix(LAUNCHER_OVERRIDE) for override in overrides])
        launcher["hydra_launcher"] = OmegaConf.to_container(
            OmegaConf.merge(launcher["hydra_launcher"], changes), resolve=False
        )
    return launcher


def check_jobs(jobs: int, console: Console) -> int:
    """The local launcher's worker count: ValueError below 1; above the CPU cores this process may use, the core count,
    with one line saying so (more workers than cores only share them, each with a run's memory)."""
    if jobs < 1:
        raise ValueError(f"--jobs must be at least 1, got {jobs}")
    # the cores this process may use: a SLURM job or a container may have fewer than the machine (Linux tells)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if jobs > cores:
        console.print(
            f"--jobs {jobs} is more than the {cores} CPU cores here: running {cores} workers at a time", highlight=False
        )
        return cores
    return jobs


def check_run_function(dotted_path: str) -> None:
    """The run function's module must exist (found without importing it: training imports are slow)."""
    module = dotted_path.rpartition(".")[0]
    try:
        found = bool(module) and importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        found = False
    if not found:
        raise ValueError(f"run function {dotted_path!r}: no module {module!r}; expected a dotted path module.function")


# --- submitit launchers: one array job per launch (slurm: experiments.sweeps.slurm_sweep) --------------------------


def run_with_submitit(
    runs: list[PlannedRun],
    hydra_launcher: dict,
    root: Path,
    run_function: str,
    stale_after_seconds: float,
    console: Console,
) -> list[tuple[PlannedRun, RunOutcome]]:
    """submitit_local: write a manifest, run the Hydra app in multirun mode (it waits for the array jobs), then read
    the store. A stop signal is forwarded to the Hydra app, and waited for."""
    if not runs:
        return []
    launch_dir = launch_directory(runs[0], root)
    manifest_path = write_manifest(
        launch_dir / "manifest.json", Manifest(root, run_function, stale_after_seconds, runs)
    )
    command = hydra_command(hydra_launcher, launch_dir, manifest_path, len(runs))
    console.print(
        f"launching {len(runs)} array jobs through Hydra's submitit launcher; logs in {launch_dir}", soft_wrap=True
    )
    with subprocess.Popen(command, cwd=REPOSITORY_ROOT, env=worker_environment()) as hydra:
        try:
            returncode = hydra.wait()
        except Stopped as stopped:  # forwarded (subprocess.run would SIGKILL the app), then waited for
            hydra.send_signal(stopped.signum)
            hydra.wait()
            raise
    return [(run, stored_outcome(run, root, launch_dir, returncode, stale_after_seconds)) for run in runs]


def hydra_command(hydra_launcher: dict, launch_dir: Path, manifest_path: Path, count: int) -> list[str]:
    """``python -m experiments.sweeps.hydra_worker --multirun hydra/launcher=submitit_* hydra.launcher.*=... +index=range(0,N)``."""
    launcher_class = hydra_launcher["_target_"].rsplit(".", 1)[-1]
    parameters = [  # ++ adds the keys of a mapping (additional_parameters) that Hydra's default leaves empty
        f"{'++' if isinstance(value, dict) else ''}hydra.launcher.{key}={override_value(value, quote_strings=True)}"
        for key, value in hydra_launcher.items()
        if key != "_target_"
    ]
    return [
        sys.executable, "-m", "experiments.sweeps.hydra_worker", "--multirun",
        f"hydra/launcher={HYDRA_LAUNCHERS[launcher_class]}",
        *parameters,
        f"hydra.sweep.dir={override_value(str(launch_dir), quote_strings=True)}",
        f"+manifest={override_value(str(manifest_path), quote_strings=True)}",
        f"+index=range(0,{count})",
    ]  # fmt: skip


def worker_environment() -> dict[str, str]:
    """This environment with the repository first on PYTHONPATH (the jobs import experiments and the run function)."""
    paths = [str(REPOSITORY_ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return os.environ | {"PYTHONPATH": os.pathsep.join(paths)}


def stored_outcome(
    run: PlannedRun, root: Path, launch_dir: Path, returncode: int, stale_after_seconds: float
) -> RunOutcome:
    run_dir = run_directory(run, root)
    status = run_status(run_dir, stale_after_seconds)
    if status == "done":
        return RunOutcome("done", run_dir, divergence_note((finished_result(run_dir) or {}).get("metrics", {})))
    if status == "running":
        return skipped_outcome(run_dir)
    if status == "failed":
        return RunOutcome("failed", run_dir, f"{failure_message(run_dir)} ({run_dir / ERROR_FILE})")
    return RunOutcome(
        "failed",
        run_dir,
        f"its job ended without result.json or error.json (Hydra exit code {returncode}; logs in {launch_dir})",
    )


# --- command line -------------------------------------------------------------------------------------------------


def add_sweep_arguments(parser: argparse.ArgumentParser) -> None:
    from experiments.config.artifacts import known_artifacts

    parser.add_argument("artifact", help=f"the paper artifact, one of {known_artifacts()}")
    add_scale_argument(parser)
    parser.add_argument("--launcher", default="local", help=f"one of {group_choices('launcher')} (configs/launcher/)")
    parser.add_argument(
        "--jobs", type=int, default=None, help="worker processes of the local launcher (default: its config)"
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="a summary per model and task of the runs, what is done and a compute estimate (tokens, FLOPs, GPU-hours); run nothing",
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="with --dry-run: also list every run with its run id, status and estimate",
    )
    default = Accelerator()
    parser.add_argument(
        "--gpu-name",
        help="with --dry-run: the GPU the GPU-hours assume, by name (default: the device "
        f"measured in {MEASURED_THROUGHPUT.name} if it holds one, else {default.name}); a part of a "
        "measured device's name (H200) takes that device's measured MFU per model",
    )
    parser.add_argument(
        "--gpu-tflops",
        type=float,
        help="with --dry-run: that GPU's dense peak in TFLOP/s (default: "
        f"the measured device's, else {default.peak_tflops:g}, an A100 in bf16)",
    )
    parser.add_argument(
        "--utilization",
        type=float,
        help="with --dry-run: the fraction of the peak a run reaches (model "
        "FLOPs utilisation) for models without a measured one (default: "
        f"{default.utilization:g})",
    )
    parser.add_argument(
        "--no-wait",
        dest="wait",
        action="store_false",
        help="with --launcher slurm: submit the jobs and exit; `xlstm-suite status` collects the runs, "
        "and a rerun of the sweep submits none of the queued ones again",
    )
    parser.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="only the runs of the cells with this value of a cell key, e.g. model.embedding_dim=192 "
        "(repeat it: every key must match, a key given twice takes either value)",
    )
    parser.add_argument("--run-function", default=DEFAULT_RUN_FUNCTION, help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, default=RUN_STORE, help=argparse.SUPPRESS)
    parser.add_argument("--claim-timeout", type=float, default=DEFAULT_STALE_AFTER_SECONDS, help=argparse.SUPPRESS)
    parser.add_argument("--poll-seconds", type=float, default=POLL_SECONDS, help=argparse.SUPPRESS)  # SLURM (tests)
    add_overrides_argument(parser, "Hydra overrides for every run, e.g. model.num_blocks=3")


def sweep_command(arguments: argparse.Namespace) -> int:
    try:
        return run_sweep(
            arguments.artifact,
            arguments.scale,
            launcher=arguments.launcher,
            jobs=arguments.jobs,
            dry_run=arguments.dry_run,
            verbose=arguments.verbose,
            overrides=arguments.overrides,
            run_function=arguments.run_function,
            root=arguments.root,
            stale_after_seconds=arguments.claim_timeout,
            accelerator=command_line_accelerator(arguments.gpu_name, arguments.gpu_tflops, arguments.utilization),
            where=arguments.where,
            wait=arguments.wait,
            poll_seconds=arguments.poll_seconds,
        )
    except ValueError as error:
        print(f"xlstm-suite sweep: error: {error}", file=sys.stderr)
        return 2
    except StoreNotWritable as error:
        print(f"xlstm-suite sweep: error: {error}", file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="xlstm-suite sweep", description=__doc__)
    add_sweep_arguments(parser)
    return sweep_command(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
