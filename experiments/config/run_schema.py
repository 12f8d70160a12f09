"""The schema of a run config (configs/train.yaml and its groups): every key the training code reads, typed and
bounded. A key outside these schemas is read by no code, so it is an error (naming the closest valid keys).

The task group's schema comes from its family (tasks.registry); the model group's options are checked by the
backbone's own config dataclass (models.catalog).
"""

from dataclasses import dataclass, field
from typing import Literal

from experiments.config.bounds import (
    BATCH,
    CLIP_NORM,
    MAX_BLOCKS,
    MAX_DEVICES,
    MAX_EMBEDDING_DIM,
    MAX_NODES,
    MAX_THREADS,
    NOT_NEGATIVE_RATE,
    RATE,
    SEED,
    SLEEP_SECONDS,
    STEPS,
    STEPS_FROM_ZERO,
)

# Lightning's precision strings (lightning.fabric.connector._PRECISION_INPUT_STR), accelerators and strategies
# (its StrategyRegistry), copied so that a config is checked without importing Lightning; a test keeps them equal.
PRECISIONS = (
    "transformer-engine",
    "transformer-engine-float16",
    "16-true",
    "16-mixed",
    "bf16-true",
    "bf16-mixed",
    "32-true",
    "64-true",
)
ACCELERATORS = ("auto", "cpu", "gpu", "cuda", "mps", "tpu")
STRATEGIES = (
    "auto",
    "ddp",
    "ddp_spawn",
    "ddp_fork",
    "ddp_notebook",
    "ddp_find_unused_parameters_false",
    "ddp_find_unused_parameters_true",
    "ddp_spawn_find_unused_parameters_false",
    "ddp_spawn_find_unused_parameters_true",
    "ddp_fork_find_unused_parameters_false",
    "ddp_fork_find_unused_parameters_true",
    "ddp_notebook_find_unused_parameters_false",
    "ddp_notebook_find_unused_parameters_true",
    "deepspeed",
    "deepspeed_stage_1",
    "deepspeed_stage_2",
    "deepspeed_stage_2_offload",
    "deepspeed_stage_3",
    "deepspeed_stage_3_offload",
    "deepspeed_stage_3_offload_nvme",
    "fsdp",
    "fsdp_cpu_offload",
    "single_device",
    "single_xla",
    "xla_debug",
    "xla",
    "single_tpu",
)
LOGGERS = ("csv", "tensorboard", "wandb")
# torch.distributed.fsdp.ShardingStrategy's names (the paper: "FSDP in SHARD_GRAD_OP mode [...] For small models we use
# NO_SHARD"); a test keeps them equal to torch's.
FSDP_SHARDING = ("FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD", "_HYBRID_SHARD_ZERO2")
SCALES = ("smoke", "mini", "paper", "adhoc")

FRACTION = {"at_least": 0, "at_most": 1}

INITIAL = "initial"  # an evaluation at the model's initial weights: no checkpoint loaded (kinds measuring time, memory)
CHECKPOINTS = ("best", "last", INITIAL)  # the checkpoints an evaluation run may take of its training run


@dataclass
class ModelSection:
    """configs/model/*.yaml: the backbone by registry name, its size and its own options."""

    name: str
    embedding_dim: int = field(metadata={"at_least": 1, "at_most": MAX_EMBEDDING_DIM})
    num_blocks: int = field(metadata={"at_least": 1, "at_most": MAX_BLOCKS})
    options: dict = field(default_factory=dict)
    # the decoder's weight is the token embedding (zoology's language models tie them; the paper's associative-recall
    # "Mamba" vs "Mamba (noWT)"); the model configs leave it out (false), so their run ids stay as they were
    tie_embeddings: bool = False
    # a language model's size preset of Table spaj_peaklr ("350m"), which sets embedding_dim, num_blocks and the
    # preset's options when the config is composed (experiments.config.size_presets); absent from the model configs
    size: str | None = None


@dataclass
class OptimConfig:
    """configs/optim/*.yaml: AdamW with linear warm-up and cosine decay (experiments.training.optimizer).

    Warm-up: ``warmup_steps`` (the paper's language models: 750) or ``warmup_fraction`` of max_steps, one of the two.
    The cosine ends at ``decay_steps`` if set (the 15B-token runs decay over 30k steps and stop at 28170), else at
    max_steps. Floor: ``min_lr_ratio`` of the peak (the paper's language models: 10%) or ``min_lr``, one of the two.
    ``restarts``: warm restarts of the cosine, R + 1 equal cycles after the warm-up (the paper's LRA scheduler "with
    Restarts": R = 3; experiments.training.schedules); 0, the single cosine, when absent.
    configs/optim/adamw.yaml has none of the keys it does not use, so the run ids of its runs stay as they were.
    """

    lr: float = field(metadata=RATE)
    betas: list[float] = field(metadata=FRACTION)
    eps: float = field(metadata=RATE)
    weight_decay: float = field(metadata=NOT_NEGATIVE_RATE)
    warmup_fraction: float | None = field(default=None, metadata=FRACTION)
    min_lr: float | None = field(default=None, metadata=NOT_NEGATIVE_RATE)
    warmup_steps: int | None = field(default=None, metadata=STEPS_FROM_ZERO)
    decay_steps: int | None = field(default=None, metadata=STEPS)
    min_lr_ratio: float | None = field(default=None, metadata=FRACTION)
    restarts: int = field(default=0, metadata=STEPS_FROM_ZERO)

    def problems(self) -> list[str]:
        problems = []
        if len(self.betas) != 2 or max(self.betas) >= 1:
            problems.append(f"betas={self.betas} must be two numbers in [0, 1)")
        for first, second in (("warmup_steps", "warmup_fraction"), ("min_lr", "min_lr_ratio")):
            if (getattr(self, first) is None) == (getattr(self, second) is None):
                problems.append(
                    f"{first}={getattr(self, first)} and {second}={getattr(self, second)}: set exactly one "
                    "of the two (the other null or absent)"
                )
        if self.min_lr is not None and self.min_lr > self.lr:
            problems.append(f"min_lr={self.min_lr} must not exceed lr={self.lr} (the cosine decays from lr to min_lr)")
        if None not in (self.warmup_steps, self.decay_steps) and self.warmup_steps >= self.decay_steps:
            problems.append(f"warmup_steps={self.warmup_steps} must be below decay_steps={self.decay_steps}")
        return problems


@dataclass
class TrainerConfig:
    """configs/trainer/default.yaml: the Lightning trainer, the batch and the run's bookkeeping."""

    max_steps: int = field(metadata=STEPS)
    batch_size: int = field(metadata=BATCH)
    val_every_steps: int = field(metadata=STEPS)
    gradient_clip_val: float | None = field(metadata=CLIP_NORM)
    precision: Literal[PRECISIONS]
    accelerator: Literal[ACCELERATORS]
    devices: int | Literal["auto"] | list[int] = field(metadata={"at_most": MAX_DEVICES})  # a count or indices
    strategy: Literal[STRATEGIES]
    # null: torch's default (every core)
    num_threads: int | None = field(metadata={"at_least": 1, "at_most": MAX_THREADS})
    logger: Literal[LOGGERS]
    checkpoint: bool
    # last.ckpt, which a killed run resumes from, every this many training steps; null: at every validation.
    # configs/trainer/default.yaml leaves it out, so the run ids of its runs stay as they were
    checkpoint_every_steps: int | None = field(default=None, metadata=STEPS)
    # The keys below are absent from configs/trainer/default.yaml (a run id hashes the config): experiments.training.
    # distribution reads them with these defaults. batch_size is the global batch of an optimizer step; each process
    # loads micro_batch_size sequences at a time (null: batch_size / (devices x num_nodes), no accumulation) and
    # accumulates batch_size / (micro_batch_size x devices x num_nodes) of them.
    micro_batch_size: int | None = field(default=None, metadata=BATCH)
    num_nodes: int = field(default=1, metadata={"at_least": 1, "at_most": MAX_NODES})
    # torch.compile of the network: "auto" is the model's paper policy (models.catalog.training_policy) on CUDA only
    compile: bool | Literal["auto"] = "auto"
    fsdp_sharding: Literal[FSDP_SHARDING] = "SHARD_GRAD_OP"  # read when strategy is fsdp

    def problems(self) -> list[str]:
        problems = []
        if isinstance(self.devices, int) and self.devices < 1 and self.devices != -1:
            problems.append(
                f"devices={self.devices} must be a count >= 1, -1 (all), 'auto' or a list of device indices"
            )
        if self.checkpoint_every_steps is not None and not self.checkpoint:
            problems.append(
                f"checkpoint_every_steps={self.checkpoint_every_steps} needs checkpoint=true (or "
                "checkpoint_every_steps=null)"
            )
        devices = len(self.devices) if isinstance(self.devices, list) else self.devices
        if isinstance(devices, int) and devices >= 1:  # "auto" and -1 are counted when the run starts
            problems += batch_split_problems(self.batch_size, self.micro_batch_size, devices, self.num_nodes)
        return problems


def batch_split_problems(global_batch: int, micro_batch: int | None, devices: int, num_nodes: int) -> list[str]:
    """Why a global batch does not split into equal micro-batches over devices x num_nodes data-parallel processes
    and a whole number of accumulation steps; [] when it does."""
    processes = devices * num_nodes
    if global_batch % processes:
        return [
            f"batch_size={global_batch} (the global batch) does not split over devices={devices} x num_nodes="
            f"{num_nodes} = {processes} processes; valid: a batch_size divisible by {processes}"
        ]
    per_process = global_batch // processes
    if micro_batch is not None and per_process % micro_batch:
        return [
            f"micro_batch_size={micro_batch} does not divide the {per_process} sequences of each process (batch_size="
            f"{global_batch} over devices={devices} x num_nodes={num_nodes}) into whole accumulation steps; valid: "
            f"a divisor of {per_process}"
        ]
    return []


@dataclass
class DebugConfig:
    """Fault injection. ``fail_after_steps`` is read by experiments.training.train (which also reads it from the
    environment variable XLSTM_SUITE_FAIL_AFTER_STEPS, leaving the run's id as it is); the others by the fake run
    functions of the sweep runner's tests (tests/sweep_fakes.py)."""

    fail_after_steps: int | None = field(default=None, metadata=STEPS)
    sleep_seconds: float = field(default=0.0, metadata=SLEEP_SECONDS)
    fail_model: str | None = None
    exit_model: str | None = None


@dataclass
class RunConfig:
    """configs/train.yaml: the groups, the seed and the sweep's labels."""

    model: dict
    task: dict
    optim: dict
    trainer: dict
    debug: dict
    seed: int = field(metadata=SEED)
    artifact: str | None
    scale: Literal[SCALES] | None
    evaluate: dict | None = None  # an evaluation-only run (EvaluateConfig); absent for a training run


@dataclass
class EvaluateConfig:
    """An evaluation-only run: the finished training run (its artifact, scale and run id in the same run store;
    ``cell``: its grid cell, for messages) whose ``checkpoint`` (best: by the run's validation metric; last; initial: its model's initial weights, for kinds
    that measure time and memory) is evaluated with no training: by the evaluation ``kind`` with its ``settings`` (experiments.config.
    evaluation_kinds, which checks them), or without a kind on this run's task config
    (experiments.training.train.run_evaluation). Sections without a kind leave both keys out (their run ids stay)."""

    artifact: str
    scale: Literal[SCALES]
    run_id: str
    checkpoint: Literal[CHECKPOINTS]
    cell: str = ""
    kind: str | None = None
    settings: dict | None = None


SECTIONS = {"optim": OptimConfig, "trainer": TrainerConfig, "debug": DebugConfig}
