"""The SLURM jobs of a sweep's runs, as the scheduler knows them.

Each run a sweep submits records its job in ``slurm_job.json`` in its run directory (the array element's id,
``<array job>_<index>``, and where its logs are). A later sweep asks ``squeue`` whether that job is still queued or
running (a requeued job is queued again) and skips the run if so, so that a rerun never submits a second job for it;
a sweep waiting for its jobs asks ``squeue`` for all of them at once, and ``sacct`` how a job that left the queue
ended (COMPLETED, FAILED, TIMEOUT, OUT_OF_MEMORY, CANCELLED, ...). Both print array ids as submitit's parser reads
them (``<job>_<index>``, or a pending range ``<job>_[0-14%15]``).

A job's rank 0 requeues its job with ``scontrol requeue`` (requeue_job): SLURM then ends the job's processes and queues
it again, with SLURM_RESTART_COUNT one higher.
"""

import json
import subprocess
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from submitit.slurm.slurm import read_job_id

from experiments.sweeps.run_store import write_json

JOB_FILE = "slurm_job.json"
COMMAND_TIMEOUT_SECONDS = 120  # a busy controller answers slowly; longer is a fault


class SchedulerUnavailable(RuntimeError):
    """squeue, sacct or scontrol is missing here, or failed: the line names the command and its error."""


@dataclass(frozen=True)
class SubmittedJob:
    """The SLURM job of a run: its id (``<array job>_<index>``), when it was submitted, and its logs' folder."""

    job_id: str
    submitted: str
    logs: str

    @property
    def array_job(self) -> str:
        return self.job_id.split("_", 1)[0]


def record_job(run_dir: Path, job_id: str, logs: Path) -> SubmittedJob:
    """Write the run's slurm_job.json (its directory is made if the run has not started yet)."""
    job = SubmittedJob(job_id, datetime.now(UTC).isoformat(), str(logs))
    write_json(run_dir / JOB_FILE, asdict(job))
    return job


def recorded_job(run_dir: Path) -> SubmittedJob | None:
    """The job the run's slurm_job.json names; None without one (or with one that does not read)."""
    try:
        return SubmittedJob(**json.loads((run_dir / JOB_FILE).read_text()))
    except (OSError, ValueError, TypeError):
        return None


def job_states(text: str) -> dict[str, str]:
    """``<job id>|<state>`` lines (a header line first) -> job id -> state, a pending array range expanded into its
    elements; "CANCELLED by 1234" reads as CANCELLED."""
    states = {}
    for line in text.splitlines()[1:]:
        job, _, state = line.partition("|")
        job = job.strip()
        if not job or "." in job:  # a job step (<job>.batch, <job>.0): its job has a line of its own
            continue
        for element in read_job_id(job):
            first = int(element[1]) if len(element) > 1 else None
            last = int(element[2]) if len(element) > 2 else first
            ids = [element[0]] if first is None else [f"{element[0]}_{index}" for index in range(first, last + 1)]
            states.update(dict.fromkeys(ids, state.split()[0] if state.strip() else "UNKNOWN"))
    return states


def scheduler_output(command: list[str]) -> str:
    """The command's standard output; SchedulerUnavailable when it is missing or fails."""
    try:
        finished = subprocess.run(command, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_SECONDS)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise SchedulerUnavailable(f"{command[0]}: {error}") from error
    if finished.returncode != 0:
        raise SchedulerUnavailable(f"`{' '.join(command)}` exited {finished.returncode}: {finished.stderr.strip()}")
    return finished.stdout


def queued_or_running(job_ids: list[str]) -> dict[str, str]:
    """Job id -> state of those of ``job_ids`` still in SLURM's queue (pending, running, requeued, completing, ...),
    from one squeue call; SchedulerUnavailable without squeue."""
    if not job_ids:
        return {}
    arrays = sorted({job_id.split("_", 1)[0] for job_id in job_ids})
    output = scheduler_output(["squeue", "--noheader", "--array", "--format=%i|%T", f"--jobs={','.join(arrays)}"])
    states = job_states("JobID|State\n" + output)
    return {job_id: states[job_id] for job_id in job_ids if job_id in states}


def final_states(job_ids: list[str]) -> dict[str, str]:
    """Job id -> how each of ``job_ids`` ended, from one sacct call (a job sacct does not know is left out)."""
    if not job_ids:
        return {}
    arrays = sorted({job_id.split("_", 1)[0] for job_id in job_ids})
    states = job_states(
        scheduler_output(
            ["sacct", "--parsable2", "--allocations", "--format=JobID,State", f"--jobs={','.join(arrays)}"]
        )
    )
    return {job_id: states[job_id] for job_id in job_ids if job_id in states}


def requeue_job(job_id: str) -> None:
    """``scontrol requeue <job>``: SLURM ends the job's processes (SIGTERM) and queues it again; SchedulerUnavailable
    naming scontrol's error (e.g. a job submitted without --requeue where the cluster requeues none by default)."""
    scheduler_output(["scontrol", "requeue", job_id])
