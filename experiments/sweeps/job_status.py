"""``xlstm-suite status <artifact> --scale S [--where KEY=VALUE ...] [overrides]``: where each run of a sweep stands,
its SLURM job asked once (squeue, then sacct for the jobs that left the queue), without waiting: what a sweep
submitted with ``--no-wait``, or one stopped while it waited, is collected here.

One line per run not done (queued or running with its job and state, held by a worker, failed with error.json's
message and how its job ended, or not submitted), then the counts. Exit code 0 when no run failed, 1 otherwise.
"""

import argparse
import sys
from collections import Counter
from pathlib import Path

from rich.console import Console

from experiments.config.arguments import add_overrides_argument, add_scale_argument
from experiments.config.artifacts import PlannedRun, load_artifact
from experiments.paths import checked_folder
from experiments.sweeps.claims import CLAIM_FILE, DEFAULT_STALE_AFTER_SECONDS, claim_is_live, read_claim
from experiments.sweeps.run_store import RUN_STORE, failure_message, finished_result, run_directory
from experiments.sweeps.run_subset import parse_where, runs_where
from experiments.sweeps.slurm_jobs import SchedulerUnavailable, final_states, queued_or_running, recorded_job
from experiments.sweeps.slurm_sweep import ended_outcome
from experiments.sweeps.status import committed_results_note

ORDER = ("done", "queued", "running", "failed", "not submitted")


def run_state(
    run: PlannedRun, root: Path, live: dict[str, str], ended: dict[str, str], stale_after_seconds: float
) -> tuple[str, str]:
    """(one of ORDER, what to say of it) for one run."""
    run_dir = run_directory(run, root)
    if finished_result(run_dir) is not None:
        return "done", ""
    job = recorded_job(run_dir)
    if job is not None and job.job_id in live:
        state = live[job.job_id]
        return ("running" if state == "RUNNING" else "queued"), f"SLURM job {job.job_id} {state}"
    if claim_is_live(run_dir, stale_after_seconds):
        return "running", f"held by {read_claim(run_dir / CLAIM_FILE).describe()}"
    if job is not None:
        outcome = ended_outcome(run_dir, job, ended.get(job.job_id), stale_after_seconds)
        return ("running" if outcome.status == "claimed" else "failed"), outcome.detail
    failure = failure_message(run_dir)
    return ("failed", failure) if failure else ("not submitted", "")


def print_status(console: Console, runs: list[PlannedRun], root: Path, stale_after_seconds: float) -> Counter:
    """The lines and counts of the status command; the counts."""
    runs = [run for run in runs if run.unavailable is None]
    jobs = [job.job_id for run in runs if (job := recorded_job(run_directory(run, root))) is not None]
    try:
        live = queued_or_running(jobs)
        ended = final_states([job for job in jobs if job not in live])
    except SchedulerUnavailable as error:
        console.print(f"[yellow]warning[/]: cannot ask SLURM about the runs' jobs ({error})", soft_wrap=True)
        live, ended = {}, {}
    counts = Counter()
    for run in runs:
        state, detail = run_state(run, root, live, ended, stale_after_seconds)
        counts[state] += 1
        if state != "done":
            console.print(
                f"  {state}: {run.label}" + (f": {detail}" if detail else ""),
                soft_wrap=True,
                highlight=False,
                markup=False,
            )
    console.print(f"{len(runs)} runs: " + ", ".join(f"{state} {counts[state]}" for state in ORDER), highlight=False)
    return counts


def add_status_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("artifact", help="the paper artifact of the sweep")
    add_scale_argument(parser)
    parser.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="only the runs of the cells with this value of a cell key (as the sweep's --where)",
    )
    parser.add_argument("--root", type=Path, default=RUN_STORE, help=argparse.SUPPRESS)
    parser.add_argument("--claim-timeout", type=float, default=DEFAULT_STALE_AFTER_SECONDS, help=argparse.SUPPRESS)
    add_overrides_argument(parser, "the Hydra overrides the sweep ran with")


def status_command(arguments: argparse.Namespace) -> int:
    console = Console()
    try:
        root = checked_folder(arguments.root, "--root").resolve()
        artifact = load_artifact(arguments.artifact)
        overrides = [override for override in arguments.overrides if not override.startswith("hydra.launcher.")]
        runs = artifact.runs(arguments.scale, overrides)
        where = parse_where(arguments.where)
        runs = runs_where(runs, where) if where else runs
    except ValueError as error:
        print(f"xlstm-suite status: error: {error}", file=sys.stderr)
        return 2
    console.print(f"[bold]{artifact.name}[/] ({arguments.scale}):")
    counts = print_status(console, runs, root, arguments.claim_timeout)
    note = committed_results_note(artifact.name, arguments.scale, runs, root, overrides)
    if note is not None:
        console.print(note, highlight=False, soft_wrap=True, markup=False)
    return 1 if counts["failed"] else 0
