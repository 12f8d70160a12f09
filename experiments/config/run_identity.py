"""What identifies a run: its resolved config less where it runs and how each process's share of the batch is split.

A run's id hashes its config (YAML, keys sorted) after ``computation_container`` has put its placement keys back to
the defaults of configs/trainer/default.yaml (or left them out, where that file leaves them out): the processes
per node (``devices``), the nodes, the micro-batch (gradient accumulation), the CPU threads, FSDP's sharding mode,
the DDP flavour of the strategy, and how often ``last.ckpt`` is written. None changes what the run computes: the
global batch of a step, its data order (a function of seed and step) and its loss normalisation are the same on one
process and on 8 nodes x 8 GPUs (tests/test_distributed.py trains the same weights), so the run keeps one id: a run
started on one node resumes on eight and is found done on any. A run config written before this rule keeps its id
whenever its placement keys held their defaults, as every sweep's did.
"""

import hashlib
from typing import Any

import yaml
from omegaconf import DictConfig, OmegaConf
from omegaconf._utils import get_omega_conf_dumper

# placement keys of configs/trainer/default.yaml and their values there
PLACEMENT_DEFAULTS = {"devices": 1, "num_threads": 1}
# placement keys that configs/trainer/default.yaml leaves out (their schema defaults: experiments.config.run_schema)
PLACEMENT_EXTRAS = ("num_nodes", "micro_batch_size", "fsdp_sharding", "checkpoint_every_steps")
# strategies that run the same computation as a single process (data parallel); FSDP's parameters train in bfloat16
DATA_PARALLEL_PREFIXES = ("auto", "ddp")


def computation_container(config: DictConfig) -> dict[str, Any]:
    """``config`` as plain containers (interpolations as written, as ``config_yaml`` keeps them) with its placement
    keys at their defaults: what a run computes, wherever and however split. Plain dicts: a planned grid computes
    this for every cell, and a copy of an OmegaConf tree costs a hundred times more."""
    container = OmegaConf.to_container(config, enum_to_str=True)
    trainer = container.get("trainer")
    if isinstance(trainer, dict):
        for key, default in PLACEMENT_DEFAULTS.items():
            if key in trainer:
                trainer[key] = default
        for key in PLACEMENT_EXTRAS:
            trainer.pop(key, None)
        if str(trainer.get("strategy", "auto")).startswith(DATA_PARALLEL_PREFIXES):
            trainer["strategy"] = "auto"
    return container


def computation_yaml(config: DictConfig) -> str:
    """The computation container as ``config_yaml`` writes a config (OmegaConf's YAML, keys sorted): a config at
    the default placement gives its own ``config_yaml`` text, so its id is the one it had before this rule."""
    return yaml.dump(computation_container(config), default_flow_style=False, allow_unicode=True, sort_keys=True,
                     Dumper=get_omega_conf_dumper())


def run_id_of(config: DictConfig) -> str:
    """The first 12 hex digits of the sha256 of the computation YAML."""
    return hashlib.sha256(computation_yaml(config).encode()).hexdigest()[:12]
