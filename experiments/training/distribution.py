"""The paper's training recipe on Lightning's distributed engine: the global batch over processes and gradient
accumulation, precision and FSDP per model, torch.compile per model, and SLURM's environment.

Appendix B.2: "batch sizes 256 or 512"; "For parallelization, we use PyTorch FSDP in SHARD_GRAD_OP mode with mixed
precision in bfloat16, where applicable. For small models we use NO_SHARD. We keep the weights in float32 and reduce
the gradients across GPUs in float32." The per-model facts (compile, autocast) are models.catalog.training_policy.

The trainer keys this module reads beyond configs/trainer/default.yaml (micro_batch_size, num_nodes, compile,
fsdp_sharding) are absent from existing configs, so a run's id does not change; their defaults are the schema's
(experiments.config.run_schema.TrainerConfig).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
from omegaconf import DictConfig

from experiments.config.run_schema import TrainerConfig, batch_split_problems
from models.catalog import training_policy

# Appendix B.2's FSDP mixed precision, confirmed by its run names ("rd-float32-pd-bfloat16-bd-bfloat16"): bfloat16
# parameters and buffers in the forward and backward, gradients reduced across GPUs in float32.
PARAM_DTYPE, REDUCE_DTYPE, BUFFER_DTYPE = torch.bfloat16, torch.float32, torch.bfloat16
CUDA_ACCELERATORS = ("gpu", "cuda")


def trainer_setting(trainer: DictConfig, key: str):
    """``trainer.<key>``, or its schema default when the config leaves it out."""
    if key in trainer:
        return trainer[key]
    field = next(field for field in dataclasses.fields(TrainerConfig) if field.name == key)
    return field.default


@dataclass(frozen=True)
class BatchSplit:
    """One optimizer step's global batch: ``micro_batch`` sequences per process and forward pass, on ``devices`` x
    ``num_nodes`` processes, ``accumulation`` forward passes per process."""

    global_batch: int
    micro_batch: int
    devices: int
    num_nodes: int

    @property
    def accumulation(self) -> int:
        return self.global_batch // (self.micro_batch * self.devices * self.num_nodes)


def uses_cuda(trainer: DictConfig) -> bool:
    accelerator = trainer.accelerator
    return accelerator in CUDA_ACCELERATORS or (accelerator == "auto" and torch.cuda.is_available())


def device_count(trainer: DictConfig) -> int:
    """Processes per node: a count, the length of a list of device indices, or for "auto" and -1 every GPU here
    (one process on CPU, as Lightning counts them)."""
    devices = trainer.devices
    if isinstance(devices, int) and devices >= 1:
        return devices
    if not isinstance(devices, (int, str)):
        return len(devices)
    return max(torch.cuda.device_count(), 1) if uses_cuda(trainer) else 1


def batch_split(trainer: DictConfig) -> BatchSplit:
    """The run's split of ``trainer.batch_size``; ValueError naming the values when it does not split evenly."""
    devices, num_nodes = device_count(trainer), trainer_setting(trainer, "num_nodes")
    micro_batch = trainer_setting(trainer, "micro_batch_size")
    problems = batch_split_problems(trainer.batch_size, micro_batch, devices, num_nodes)
    if problems:
        raise ValueError(f"trainer.{problems[0]}")
    if micro_batch is None:
        micro_batch = trainer.batch_size // (devices * num_nodes)
    return BatchSplit(trainer.batch_size, micro_batch, devices, num_nodes)


def precision_and_strategy(trainer: DictConfig, model_name: str):
    """Lightning's precision and strategy for the run: its configured ones, except under ``strategy=fsdp``, where
    bf16-mixed is the paper's recipe for the model: FSDP parameters in bfloat16 and gradients reduced in float32,
    with PyTorch autocast for the models that train with it (xLSTM, Transformers, Mamba, RWKV-4, ...) and without
    for those where it "did not work" (flash-linear-attention models, RWKV-5/6: precision 32-true, float32 weights).
    ValueError for a bf16-mixed run of such a model without FSDP (autocast would be its only bfloat16)."""
    from lightning.pytorch.strategies import FSDPStrategy
    from torch.distributed.fsdp import MixedPrecision

    policy = training_policy(model_name)
    if trainer.strategy != "fsdp":
        if trainer.precision == "bf16-mixed" and not policy.autocast:
            raise ValueError(
                f"model {model_name!r} trains in bfloat16 through FSDP's parameter dtype, without PyTorch "
                "autocast (the paper: automatic mixed precision 'did not work'), so trainer.precision="
                f"bf16-mixed needs trainer.strategy=fsdp (trainer.fsdp_sharding=NO_SHARD on one device), "
                f"not {trainer.strategy!r}; or set trainer.precision=32-true"
            )
        return trainer.precision, trainer.strategy
    if trainer.precision not in ("bf16-mixed", "32-true"):
        raise ValueError(
            f"trainer.strategy=fsdp trains with trainer.precision bf16-mixed (the paper's recipe for each "
            f"model) or 32-true, not {trainer.precision!r}"
        )
    sharding = trainer_setting(trainer, "fsdp_sharding")
    if trainer.precision == "32-true":
        return "32-true", FSDPStrategy(sharding_strategy=sharding)
    mixed = MixedPrecision(param_dtype=PARAM_DTYPE, reduce_dtype=REDUCE_DTYPE, buffer_dtype=BUFFER_DTYPE)
    precision = "bf16-mixed" if policy.autocast else "32-true"
    return precision, FSDPStrategy(sharding_strategy=sharding, mixed_precision=mixed)


def compiles(trainer: DictConfig, model_name: str) -> bool:
    """Whether the run's network is torch.compiled: ``trainer.compile`` true or false, or for "auto" the paper's
    policy for the model, on CUDA only (CPU runs stay eager, as before)."""
    setting = trainer_setting(trainer, "compile")
    if setting == "auto":
        return training_policy(model_name).compile and uses_cuda(trainer)
    return setting


def compile_network(network: torch.nn.Module, trainer: DictConfig, model_name: str) -> torch.nn.Module:
    """``network`` compiled in place when compiles() says so (nn.Module.compile: its state_dict keys stay as they
    are, so checkpoints load into an eager model)."""
    if compiles(trainer, model_name):
        network.compile()
    return network


def cluster_plugins() -> list:
    """Lightning's SLURM environment when this process is a SLURM task (the job's ranks, nodes and rendezvous), without
    its automatic requeue: SLURM's requeue signal is ours (experiments.training.requeue stops the run at a step
    boundary; Lightning's handler saved inside the signal, and hung); nothing elsewhere."""
    from lightning.pytorch.plugins.environments import SLURMEnvironment

    if SLURMEnvironment.detect():
        return [SLURMEnvironment(auto_requeue=False)]
    return []


def distributed_trainer_arguments(config: DictConfig) -> dict:
    """The keyword arguments of ``lightning.Trainer`` that place the run: precision, accelerator, devices, num_nodes,
    strategy and gradient accumulation (its plugins add cluster_plugins()). Raises ValueError before any compute for a
    bad combination."""
    trainer = config.trainer
    split = batch_split(trainer)
    precision, strategy = precision_and_strategy(trainer, config.model.name)
    return {
        "precision": precision,
        "accelerator": trainer.accelerator,
        "devices": trainer.devices,
        "num_nodes": split.num_nodes,
        "strategy": strategy,
        "accumulate_grad_batches": split.accumulation,
    }


class ShardedGradientClipping:
    """A LightningModule mixin: ``trainer.gradient_clip_val`` under FSDP clips by the norm of the whole model's
    gradient over all shards, through the root FSDP module's clip_grad_norm_. Lightning's FSDP precision refuses norm
    clipping (torch.nn.utils.clip_grad_norm_ would see one shard) and leaves it to this hook; elsewhere it is
    Lightning's own clipping."""

    def configure_gradient_clipping(self, optimizer, gradient_clip_val=None, gradient_clip_algorithm=None) -> None:
        from lightning.pytorch.strategies import FSDPStrategy

        strategy = self.trainer.strategy
        if isinstance(strategy, FSDPStrategy) and gradient_clip_val and gradient_clip_algorithm in (None, "norm"):
            strategy.model.clip_grad_norm_(gradient_clip_val)
            return
        self.clip_gradients(
            optimizer, gradient_clip_val=gradient_clip_val, gradient_clip_algorithm=gradient_clip_algorithm
        )
