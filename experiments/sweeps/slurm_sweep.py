"""The slurm launcher: a sweep's runs as one SLURM job array, each run's job recorded in its run directory, the jobs
collected one by one.

Submission goes through submitit with the launcher's keys as Hydra's submitit launcher hands them to it (its
SlurmQueueConf: the shared keys as they are, the others prefixed ``slurm_``), but without Hydra's wait: that waited
for the array's results in order and raised at the first failed job, leaving the sweep to report the runs still
queued as failed. Here every run records its job (experiments.sweeps.slurm_jobs), and the sweep either exits at once
(``--no-wait``; ``xlstm-suite status`` collects the runs later) or asks squeue about all its jobs every
POLL_SECONDS: a run is collected when its result.json is there, or when its job has left the queue without one
(failed, with error.json's message where the job wrote one, and the state sacct gives: TIMEOUT, OUT_OF_MEMORY, ...).
A job that ends while another worker holds its run hands the run back to the sweep's wait for claims, which submits
it again only if it is not done. A stop signal stops the waiting; the jobs stay queued, and a rerun of the sweep
submits none of them again (it skips every run whose job is queued or running).
"""

import os
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException
from rich.console import Console

from experiments.config.artifacts import PlannedRun
from experiments.paths import REPOSITORY_ROOT
from experiments.sweeps.claims import claim_is_live
from experiments.sweeps.manifest import Manifest, launch_directory, write_manifest
from experiments.sweeps.run_execution import skipped_outcome
from experiments.sweeps.run_outcome import RunOutcome
from experiments.sweeps.run_store import ERROR_FILE, divergence_note, failure_message, finished_result, run_directory
from experiments.sweeps.slurm_jobs import (
    SchedulerUnavailable,
    SubmittedJob,
    final_states,
    queued_or_running,
    record_job,
    recorded_job,
)

POLL_SECONDS = 60.0  # between squeue calls while a sweep waits (a scheduler serves many users)
SLURM_TARGET = "SlurmLauncher"
QUEUED = "queued"  # the outcome of a run whose job is queued or running (not collected)


def is_slurm(hydra_launcher: dict | None) -> bool:
    return hydra_launcher is not None and hydra_launcher.get("_target_", "").rsplit(".", 1)[-1] == SLURM_TARGET


@dataclass(frozen=True)
class TrackedRun:
    """A run whose SLURM job a sweep waits for, and the job's state when last asked."""

    run: PlannedRun
    job: SubmittedJob
    state: str = "PENDING"


# --- submitting ---------------------------------------------------------------------------------------------------


def slurm_queue_settings(hydra_launcher: dict) -> dict:
    """The launcher's keys over Hydra's SlurmQueueConf defaults; ValueError naming a key it does not have, or a value
    of the wrong type."""
    from hydra_plugins.hydra_submitit_launcher.config import SlurmQueueConf

    given = {key: value for key, value in hydra_launcher.items() if key != "_target_"}
    try:
        merged = OmegaConf.merge(OmegaConf.structured(SlurmQueueConf), given)
    except OmegaConfBaseException as error:
        valid = sorted(key for key in OmegaConf.structured(SlurmQueueConf).keys() if key != "_target_")
        raise ValueError(
            f"launcher slurm: {str(error).splitlines()[0]}; valid keys of hydra.launcher: {valid}"
        ) from error
    return OmegaConf.to_container(merged, resolve=False)


def submitit_executor(hydra_launcher: dict, folder: Path, name: str):
    """A submitit SLURM executor with the launcher's parameters, as Hydra's SlurmLauncher sets them up (its logs in
    ``folder``, the jobs named ``name``)."""
    import submitit
    from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf

    queue = slurm_queue_settings(hydra_launcher)
    shared = set(OmegaConf.structured(BaseQueueConf).keys())
    executor = submitit.AutoExecutor(folder=folder, cluster="slurm", slurm_max_num_timeout=queue.pop("max_num_timeout"))
    parameters = {
        key if key in shared else f"slurm_{key}": value
        for key, value in queue.items()
        if key not in ("_target_", "submitit_folder", "name")
    }
    executor.update_parameters(**parameters, name=name)
    return executor


@contextmanager
def repository_on_python_path() -> Iterator[None]:
    """The jobs inherit the submitting environment (sbatch's --export=ALL): they import the suite and the run
    function from the repository."""
    previous = os.environ.get("PYTHONPATH")
    paths = [str(REPOSITORY_ROOT), *filter(None, (previous or "").split(os.pathsep))]
    os.environ["PYTHONPATH"] = os.pathsep.join(paths)
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("PYTHONPATH")
        else:
            os.environ["PYTHONPATH"] = previous


def run_on_slurm(
    runs: list[PlannedRun],
    queued: list[TrackedRun],
    hydra_launcher: dict,
    root: Path,
    run_function: str,
    stale_after_seconds: float,
    console: Console,
    wait: bool,
    poll_seconds: float = POLL_SECONDS,
) -> list[tuple[PlannedRun, RunOutcome]]:
    """Submit the runs that no live worker holds (those are "claimed": the sweep waits for their claims), then collect
    them and the ``queued`` ones as their jobs finish; without ``wait``, their outcome is QUEUED."""
    held = [run for run in runs if claim_is_live(run_directory(run, root), stale_after_seconds)]
    to_submit = [run for run in runs if run not in held]
    tracked = queued + (
        submit(to_submit, hydra_launcher, root, run_function, stale_after_seconds, console) if to_submit else []
    )
    outcomes = [(run, skipped_outcome(run_directory(run, root))) for run in held]
    if not wait:
        return outcomes + queued_outcomes(tracked, root)
    return outcomes + (wait_for_jobs(tracked, root, stale_after_seconds, console, poll_seconds) if tracked else [])


def queued_outcomes(tracked: Sequence[TrackedRun], root: Path) -> list[tuple[PlannedRun, RunOutcome]]:
    """Runs left to their SLURM jobs, not collected: QUEUED, with the job's id and state."""
    return [
        (item.run, RunOutcome(QUEUED, run_directory(item.run, root), f"SLURM job {item.job.job_id} {item.state}"))
        for item in tracked
    ]


def print_submitted(console: Console, outcomes: list[tuple[PlannedRun, RunOutcome]], status_command: str) -> None:
    """The end of a sweep that does not wait: the runs it leaves to SLURM and the command that collects them."""
    queued = sum(outcome.status == QUEUED for _, outcome in outcomes)
    console.print(
        f"{queued} runs queued or running as SLURM jobs; `{status_command}` collects them",
        soft_wrap=True,
        highlight=False,
        markup=False,
    )


def submit(
    runs: list[PlannedRun],
    hydra_launcher: dict,
    root: Path,
    run_function: str,
    stale_after_seconds: float,
    console: Console,
) -> list[TrackedRun]:
    """One job array for the runs (run i is array element i), each run's job recorded in its run directory."""
    from experiments.sweeps.hydra_worker import slurm_array_element

    launch_dir = launch_directory(runs[0], root)
    manifest = write_manifest(launch_dir / "manifest.json", Manifest(root, run_function, stale_after_seconds, runs))
    executor = submitit_executor(hydra_launcher, launch_dir / ".submitit" / "%j", f"xlstm-suite-{runs[0].artifact}")
    with repository_on_python_path():
        jobs = executor.map_array(slurm_array_element, [str(manifest)] * len(runs), list(range(len(runs))))
    tracked = [
        TrackedRun(run, record_job(run_directory(run, root), job.job_id, job.paths.folder))
        for run, job in zip(runs, jobs)
    ]
    console.print(
        f"submitted {len(runs)} runs as SLURM job {tracked[0].job.array_job}"
        + (f" (an array of {len(runs)})" if len(runs) > 1 else "")
        + f"; logs in {launch_dir}",
        soft_wrap=True,
        highlight=False,
    )
    return tracked


# --- the jobs the scheduler still has --------------------------------------------------------------------------


def jobs_in_queue(runs: Sequence[PlannedRun], root: Path, console: Console) -> dict[str, TrackedRun]:
    """Run id -> its tracked run, for the runs whose recorded job is queued or running (one squeue call, only if a run
    records a job). Without squeue here (results copied off the cluster), none, and one line says so."""
    recorded = {
        run.run_id: TrackedRun(run, job) for run in runs if (job := recorded_job(run_directory(run, root))) is not None
    }
    if not recorded:
        return {}
    try:
        states = queued_or_running([tracked.job.job_id for tracked in recorded.values()])
    except SchedulerUnavailable as error:
        console.print(
            f"[yellow]warning[/]: cannot ask SLURM whether the jobs of {len(recorded)} runs are still queued "
            f"({error}); treating them as ended",
            soft_wrap=True,
            highlight=False,
        )
        return {}
    return {
        run_id: TrackedRun(tracked.run, tracked.job, states[tracked.job.job_id])
        for run_id, tracked in recorded.items()
        if tracked.job.job_id in states
    }


def print_queued(console: Console, queued: dict[str, TrackedRun], status_command: str) -> None:
    if not queued:
        return
    states = ", ".join(f"{tracked.job.job_id} {tracked.state}" for tracked in queued.values())
    console.print(
        f"{len(queued)} runs queued or running as SLURM jobs ({states}): not submitted again; "
        f"`{status_command}` collects them",
        soft_wrap=True,
        highlight=False,
        markup=False,
    )


# --- waiting and collecting -----------------------------------------------------------------------------------------


def wait_for_jobs(
    tracked: list[TrackedRun],
    root: Path,
    stale_after_seconds: float,
    console: Console,
    poll_seconds: float = POLL_SECONDS,
) -> list[tuple[PlannedRun, RunOutcome]]:
    """Collect each run as its job finishes, in the order they finish; a failed job does not stop the wait."""
    waiting = {item.run.run_id: item for item in tracked}
    outcomes = []
    arrays = sorted({item.job.array_job for item in tracked})
    console.print(
        f"waiting for {len(waiting)} SLURM jobs (job {', '.join(arrays)}); Ctrl-C stops waiting, the jobs stay queued",
        soft_wrap=True,
        highlight=False,
    )
    while waiting:
        collected = collect(list(waiting.values()), root, stale_after_seconds)
        for run, outcome in collected:
            del waiting[run.run_id]
            outcomes.append((run, outcome))
            console.print(
                f"  {outcome.status}: {run.label}" + (f": {outcome.detail}" if outcome.detail else ""),
                soft_wrap=True,
                highlight=False,
                markup=False,
            )
        if waiting:
            time.sleep(poll_seconds)
    return outcomes


def collect(tracked: list[TrackedRun], root: Path, stale_after_seconds: float) -> list[tuple[PlannedRun, RunOutcome]]:
    """The runs of ``tracked`` that are done, or whose job has left the queue, with their outcomes."""
    try:
        live = queued_or_running([item.job.job_id for item in tracked])
    except SchedulerUnavailable as error:  # a busy controller: ask again at the next poll
        print(f"warning: {error}; asking again", file=sys.stderr, flush=True)
        return []
    ended = [item for item in tracked if item.job.job_id not in live]
    try:
        states = final_states([item.job.job_id for item in ended])
    except SchedulerUnavailable:
        states = {}
    collected = []
    for item in tracked:
        run_dir = run_directory(item.run, root)
        if (result := finished_result(run_dir)) is not None:
            collected.append((item.run, RunOutcome("done", run_dir, divergence_note(result.get("metrics", {})))))
        elif item.job.job_id not in live:
            collected.append(
                (item.run, ended_outcome(run_dir, item.job, states.get(item.job.job_id), stale_after_seconds))
            )
    return collected


def ended_outcome(run_dir: Path, job: SubmittedJob, state: str | None, stale_after_seconds: float) -> RunOutcome:
    """A run whose job left the queue without result.json: claimed if another worker holds the run (its job found it
    held), else failed, with the error.json the job wrote and the job's final state."""
    if claim_is_live(run_dir, stale_after_seconds):
        return skipped_outcome(run_dir)
    failure = failure_message(run_dir) if written_since(run_dir / ERROR_FILE, job.submitted) else None
    ended = f"SLURM job {job.job_id} ended {state or '(sacct does not know it)'}"
    return RunOutcome(
        "failed",
        run_dir,
        f"{failure}; {ended}" if failure else f"{ended} without result.json or error.json; logs in {job.logs}",
    )


def written_since(path: Path, time_text: str) -> bool:
    """Whether ``path`` was written at or after ``time_text`` (ISO, with a time zone)."""
    try:
        return path.stat().st_mtime >= datetime.fromisoformat(time_text).timestamp()
    except (OSError, ValueError):
        return False
