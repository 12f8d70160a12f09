"""What identifies a run: its resolved config less where it runs and how each process's share of the batch is split.

A run's id hashes its config (YAML, keys sorted) after ``computation_config`` has put its placement keys back to
the defaults of configs/trainer/default.yaml (or left them out, where that file leaves them out): the processes
per node (``devices``), the nodes, the micro-batch (gradient accumulation), the CPU threads, FSDP's sharding mode,
the DDP flavour of the strategy, and how often ``last.ckpt`` is written. None changes what the run computes: the
global batch of a step, its data order (a function of seed and step) and its loss normalisation are the same on one
process and on 8 nodes x 8 GPUs (tests/test_distributed.py trains the same weights), so the run keeps one id: a run
started on one node resumes on eight and is found done on any. A run config written before this rule keeps its id
whenever its placement keys held their defaults, as every sweep's did.
"""

import hashlib

from omegaconf import DictConfig, OmegaConf

from experiments.config.configuration import config_yaml

# placement keys of configs/trainer/default.yaml and their values there
PLACEMENT_DEFAULTS = {"devices": 1, "num_threads": 1}
# placement keys that configs/trainer/default.yaml leaves out (their schema defaults: experiments.config.run_schema)
PLACEMENT_EXTRAS = ("num_nodes", "micro_batch_size", "fsdp_sharding", "checkpoint_every_steps")
# strategies that run the same computation as a single process (data parallel); FSDP's parameters train in bfloat16
DATA_PARALLEL_PREFIXES = ("auto", "ddp")


def computation_config(config: DictConfig) -> DictConfig:
    """``config`` with its placement keys at their defaults: what a run computes, wherever and however split."""
    normalised = OmegaConf.masked_copy(config, list(config.keys()))  # a deep copy (masked_copy copies each key)
    trainer = normalised.get("trainer")
    if trainer is None:
        return normalised
    for key, default in PLACEMENT_DEFAULTS.items():
        if key in trainer:
            trainer[key] = default
    for key in PLACEMENT_EXTRAS:
        trainer.pop(key, None)
    if str(trainer.get("strategy", "auto")).startswith(DATA_PARALLEL_PREFIXES):
        trainer.strategy = "auto"
    return normalised


def run_id_of(config: DictConfig) -> str:
    """The first 12 hex digits of the sha256 of the computation config's YAML (keys sorted)."""
    return hashlib.sha256(config_yaml(computation_config(config)).encode()).hexdigest()[:12]
