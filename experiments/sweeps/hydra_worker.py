"""A sweep's array job on SLURM (or submitit's local executor): array element ``index`` executes run ``index`` of a
sweep manifest, with the same claims as the local launcher.

On SLURM the sweep submits ``slurm_array_element`` with submitit (experiments.sweeps.slurm_sweep); the submitit_local
launcher runs ``run_array_element`` through this Hydra app, as
``python -m experiments.sweeps.hydra_worker --multirun hydra/launcher=submitit_local hydra.launcher.<key>=<value> ...
hydra.sweep.dir=<launch dir> +manifest=<launch dir>/manifest.json +index=range(0,N)``.

A job of several tasks (tasks_per_node x nodes) runs one Lightning process per task: rank 0 claims the run and tells
the others (experiments.sweeps.rank_coordination), which train beside it only if it holds the claim; rank 0 records
the result. Stop signals are handled from the start (experiments.stop_signals): SIGTERM or SIGINT stop the run
(recorded in its error.json, exit 128 + N), SLURM's requeue signal stops it at the next step boundary, saved; the
ranks then wait for each other (out of Lightning, whose SIGTERM handler would broadcast), rank 0 requeues the job, and
they wait again before exiting, so that no rank's exit ends the job step before the requeue.
"""

import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig

from experiments.config.artifacts import PlannedRun
from experiments.stop_signals import Stopped, stop_signals_raise
from experiments.sweeps.claims import slurm_attempt
from experiments.sweeps.manifest import Manifest, read_manifest
from experiments.sweeps.rank_coordination import JobPlace, RankChannel, job_place, rank_channel
from experiments.sweeps.run_execution import execute_run, train_as_another_rank
from experiments.sweeps.run_outcome import RunOutcome
from experiments.sweeps.run_store import run_directory
from experiments.sweeps.slurm_jobs import SchedulerUnavailable, requeue_job


def run_array_element(manifest_path: str, index: int) -> str:
    """Run ``index`` of the manifest in this task of the job; its outcome's status. A stop exits with 128 + N."""
    with stop_signals_raise():
        manifest = read_manifest(Path(manifest_path))
        run = manifest.runs[index]
        place = job_place()
        try:
            with rank_channel(place) as channel:
                return run_as_rank(manifest, run, place, channel).status
        except Stopped as stopped:
            if stopped.requeues:
                requeue(place, run_directory(run, manifest.root))
            print(f"{stopped} (rank {place.rank} of job {slurm_attempt()[0]})", file=sys.stderr, flush=True)
            sys.exit(stopped.exit_code)


def slurm_array_element(manifest_path: str, index: int) -> str:
    """What the slurm launcher submits: run_array_element, exiting 1 when the run failed, so that SLURM records the
    job as FAILED and ends its other ranks (SLURM_KILL_BAD_EXIT, configs/launcher/slurm.yaml), which would otherwise
    wait in a collective for a rank that left."""
    status = run_array_element(manifest_path, index)
    if status == "failed":
        sys.exit(1)
    return status


def run_as_rank(manifest: Manifest, run: PlannedRun, place: JobPlace, channel: RankChannel) -> RunOutcome:
    if place.rank > 0:
        outcome = channel.receive()
        if outcome is not None:  # done, or another worker's: nothing to train beside
            return outcome
        return train_as_another_rank(run, place.rank, manifest.root, manifest.run_function)
    try:
        return execute_run(run, manifest.root, manifest.run_function, manifest.stale_after_seconds, channel.announce)
    except Exception as error:  # before it decided: the other ranks must not wait for a decision that never comes
        channel.announce(RunOutcome("failed", run_directory(run, manifest.root), f"{type(error).__name__}: {error}"))
        raise


def requeue(place: JobPlace, run_dir: Path) -> None:
    """After every rank has saved and left training: rank 0 requeues the job; all wait for it before they exit."""
    barrier(place)
    if place.rank == 0:
        job = slurm_attempt()[0]
        try:
            requeue_job(job)
            print(f"requeued SLURM job {job}: its next attempt resumes {run_dir}", file=sys.stderr, flush=True)
        except SchedulerUnavailable as error:
            print(
                f"could not requeue SLURM job {job} ({error}); the next sweep resumes {run_dir}",
                file=sys.stderr,
                flush=True,
            )
    barrier(place)


def barrier(place: JobPlace) -> None:
    """All ranks of the job meet (the training's process group, still up after Lightning's teardown)."""
    if place.world_size == 1:
        return
    import torch.distributed

    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.barrier()


@hydra.main(version_base="1.3", config_path=None, config_name=None)
def main(config: DictConfig) -> str:
    return run_array_element(config.manifest, config.index)


if __name__ == "__main__":
    main()
