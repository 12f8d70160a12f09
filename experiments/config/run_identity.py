"""What identifies a run: its resolved config less where it runs and how each process's share of the batch is split.

A run's id hashes its config (YAML, keys sorted) after ``computation_container`` has put its placement keys back to
the defaults of configs/trainer/default.yaml (or left them out, where that file leaves them out): the processes
per node (``devices``), the nodes, the micro-batch (gradient accumulation), the CPU threads, FSDP's sharding mode,
the DDP flavour of the strategy, and how often ``last.ckpt`` is written. None changes what the run computes: the
global batch of a step, its data order (a function of seed and step) and its loss normalisation are the same on one
process and on 8 nodes x 8 GPUs (tests/experiments/training/test_distributed.py trains the same weights), so the run keeps one id: a run
started on one node resumes on eight and is found done on any. A run config written before this rule keeps its id
whenever its placement keys held their defaults, as every sweep's did.

The YAML is OmegaConf's (``OmegaConf.to_yaml``: its dumper's string style, keys sorted), written by yaml's C emitter
where yaml has one (the same text, three times faster), a top-level key at a time: a block mapping's text is its
keys' texts one after the other, so the text of a section that a grid's cells share (the model, the task) is
written once per planning process, not once per cell.
"""

import hashlib
from typing import Any

import yaml
from omegaconf import DictConfig, OmegaConf
from omegaconf._utils import get_omega_conf_dumper

from experiments.config.plain_config import copied

# placement keys of configs/trainer/default.yaml and their values there
PLACEMENT_DEFAULTS = {"devices": 1, "num_threads": 1}
# placement keys that configs/trainer/default.yaml leaves out (their schema defaults: experiments.config.run_schema)
PLACEMENT_EXTRAS = ("num_nodes", "micro_batch_size", "fsdp_sharding", "checkpoint_every_steps")
# strategies that run the same computation as a single process (data parallel); FSDP's parameters train in bfloat16
DATA_PARALLEL_PREFIXES = ("auto", "ddp")
SECTION_TEXTS_KEPT = 100_000  # section texts remembered per process (a paper grid has a few thousand)


class ConfigDumper(getattr(yaml, "CDumper", get_omega_conf_dumper())):
    """OmegaConf's YAML dumper (its string style: a string that reads as a bool or number is quoted) on yaml's C
    emitter when yaml was built with libyaml."""


ConfigDumper.add_representer(str, get_omega_conf_dumper().str_representer)
_section_texts: dict[tuple[str, str], str] = {}  # (top-level key, repr of its value) -> its YAML


def computation_container(config: DictConfig | dict) -> dict[str, Any]:
    """``config`` as plain containers (interpolations as written, as ``config_yaml`` keeps them) with its placement
    keys at their defaults: what a run computes, wherever and however split. A plain config (experiments.config.
    plain_config) is copied, not changed."""
    container = OmegaConf.to_container(config, enum_to_str=True) if isinstance(config, DictConfig) else copied(config)
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


def computation_yaml(config: DictConfig | dict) -> str:
    """The computation container as ``config_yaml`` writes a config (OmegaConf's YAML, keys sorted): a config at
    the default placement gives its own ``config_yaml`` text, so its id is the one it had before this rule."""
    container = computation_container(config)
    if not container:
        return dumped(container)
    return "".join(section_text(key, container[key]) for key in sorted(container))


def section_text(key: str, value: Any) -> str:
    """The YAML of the mapping ``{key: value}``, remembered by the value's repr (which tells 1, 1.0, True and '1'
    apart, and a list from a tuple)."""
    memo_key = (key, repr(value))
    text = _section_texts.get(memo_key)
    if text is None:
        if len(_section_texts) >= SECTION_TEXTS_KEPT:
            _section_texts.clear()
        text = _section_texts[memo_key] = dumped({key: value})
    return text


def dumped(container: Any) -> str:
    return yaml.dump(container, Dumper=ConfigDumper, default_flow_style=False, allow_unicode=True, sort_keys=True)


def run_id_of(config: DictConfig | dict) -> str:
    """The first 12 hex digits of the sha256 of the computation YAML (of an OmegaConf config or a plain one)."""
    return hashlib.sha256(computation_yaml(config).encode()).hexdigest()[:12]
