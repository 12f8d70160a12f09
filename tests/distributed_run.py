"""One training run as a process of its own, for tests/experiments/training/test_distributed.py: ``python -m tests.distributed_run
<config.yaml> <run_dir>``. Lightning's "ddp" strategy starts the other ranks by running this same command line again
with the rank in their environment, as every task of a SLURM job runs the same command."""

import sys
from pathlib import Path

from omegaconf import OmegaConf

from experiments.training.train import run_training

if __name__ == "__main__":
    run_training(OmegaConf.load(sys.argv[1]), Path(sys.argv[2]))
