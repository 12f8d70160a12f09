"""A finished training run's language model, loaded for evaluation (the evaluation kinds share it): the model its
config builds with the checkpoint's weights, its tokenizer's name, and the numeric precision it is scored in."""

from contextlib import nullcontext
from pathlib import Path

import torch
from omegaconf import DictConfig, OmegaConf

from experiments.training.train import build_module
from tasks.registry import task_spec


def trained_language_model(config: DictConfig, checkpoint: Path | None) -> tuple[torch.nn.Module, torch.device]:
    """The run's language model (tokens (B, S) -> logits (B, S, V)) with the checkpoint's weights (None: its initial
    weights, drawn from the run's seed), in eval mode on the accelerator the run's trainer names (a GPU when it names
    one and one is there, else the CPU)."""
    spec = task_spec(OmegaConf.to_container(config.task, resolve=True))
    if spec.output_kind != "vocab":
        raise ValueError(
            f"this evaluation scores language models; task {spec.name!r} has output kind "
            f"{spec.output_kind!r}, not 'vocab'"
        )
    wants_gpu = config.trainer.accelerator != "cpu"
    device = torch.device("cuda" if wants_gpu and torch.cuda.is_available() else "cpu")
    torch.manual_seed(config.seed)
    with device:  # built where it runs: a 1.3B model's initialisation takes seconds on a GPU, a minute on a CPU
        module = build_module(config, spec)
    if checkpoint is not None:
        module.load_state_dict(torch.load(checkpoint, map_location=device, weights_only=False)["state_dict"])
    return module.model.eval(), device


def language_model_tokenizer(config: DictConfig) -> str:
    name = config.task.get("tokenizer")
    if name is None:
        raise ValueError(
            f"a language-model evaluation needs the task's tokenizer (task.tokenizer); task "
            f"{config.task.get('name')!r} names none"
        )
    return name


def precision_context(precision: str, device: torch.device):
    """bf16-mixed: autocast to bfloat16 with float32 weights (the paper's "bfloat16 Mixed Precision"); 32-true: none."""
    if precision == "bf16-mixed":
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    return nullcontext()
