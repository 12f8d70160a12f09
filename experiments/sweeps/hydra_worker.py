"""The Hydra app of the submitit launchers (slurm, submitit_local): array job ``index`` executes run ``index``
of a sweep manifest, with the same claims as the local launcher.

Launched by experiments.sweeps.sweep as
``python -m experiments.sweeps.hydra_worker --multirun hydra/launcher=submitit_slurm hydra.launcher.<key>=<value> ...
hydra.sweep.dir=<launch dir> +manifest=<launch dir>/manifest.json +index=range(0,N)``.
"""

from pathlib import Path

import hydra
from omegaconf import DictConfig

from experiments.sweeps.run_execution import execute_run
from experiments.sweeps.sweep import read_manifest


@hydra.main(version_base="1.3", config_path=None, config_name=None)
def main(config: DictConfig) -> str:
    manifest = read_manifest(Path(config.manifest))
    outcome = execute_run(manifest.runs[config.index], manifest.root, manifest.run_function, manifest.stale_after_seconds)
    return outcome.status


if __name__ == "__main__":
    main()
