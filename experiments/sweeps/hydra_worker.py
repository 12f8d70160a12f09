"""The Hydra app of the submitit launchers (slurm, submitit_local): array job ``index`` executes run ``index``
of a sweep manifest, with the same claims as the local launcher.

Launched by experiments.sweeps.sweep as
``python -m experiments.sweeps.hydra_worker --multirun hydra/launcher=submitit_slurm hydra.launcher.<key>=<value> ...
hydra.sweep.dir=<launch dir> +manifest=<launch dir>/manifest.json +index=range(0,N)``.

A job of several tasks (tasks_per_node x nodes) runs one Lightning process per task, each running this app: task 0
claims the run and records its result; the others train beside it as Lightning's other ranks.
"""

from pathlib import Path

import hydra
from omegaconf import DictConfig

from experiments.sweeps.run_execution import execute_run, train_as_another_rank
from experiments.sweeps.sweep import read_manifest


@hydra.main(version_base="1.3", config_path=None, config_name=None)
def main(config: DictConfig) -> str:
    import submitit

    manifest = read_manifest(Path(config.manifest))
    run = manifest.runs[config.index]
    rank = submitit.JobEnvironment().global_rank
    if rank > 0:
        return train_as_another_rank(run, rank, manifest.root, manifest.run_function).status
    outcome = execute_run(run, manifest.root, manifest.run_function, manifest.stale_after_seconds)
    return outcome.status


if __name__ == "__main__":
    main()
