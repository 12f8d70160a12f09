"""The ``generation_time`` and ``decoding_throughput`` evaluation kinds' runs: how fast a language model generates
text (Figures inference_time_generation and inference_time_decoding_throughput, Section 4.3 "Generation Times and
Maximal Throughput").

Both generate greedily (models.generation) from a prefill of random tokens drawn from the run's seed (the same
prompt for every model), one token per step through the model's recurrent step: a recurrent model's state is
constant in size, a Transformer's key-value cache is static, allocated once for every position the generation
steps through. A run's model is its training run's at a checkpoint, or at its initial weights (``evaluate.checkpoint:
initial``: time and memory do not depend on the weights' values). Times are wall-clock times, the GPU synchronised at
each token.

generation_time (settings: experiments.config.evaluation_kinds.GenerationTimeSettings) records
``generation/seconds`` (prefill and ``length`` new tokens), ``generation/ms_per_token`` (the median decoding step:
a step that the machine stalls does not move it), ``generation/ms_per_token_at_end`` (the median over the last
eighth of the steps: flat for a recurrent model, growing with the length for a Transformer, whose step reads every
cached position) and ``generation/memory_mib``
(the peak memory of the state and the activations, beyond the weights; experiments.evaluation.peak_memory).

decoding_throughput (DecodingThroughputSettings) records ``throughput/tokens_per_second`` (the decoding steps'
tokens, batch x (length - 1), per second of those steps), ``throughput/memory_mib`` (the weights plus the peak of the
state and the activations) and ``throughput/out_of_memory`` (1 when that exceeds the memory limit: the throughput
is then NaN and not measured; the state alone is checked first, from one sequence's state times the batch, so that a
batch far over the limit allocates nothing).
"""

import math
import time
from pathlib import Path

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf
from torch.utils._pytree import tree_leaves

from experiments.config.evaluation_kinds import DecodingThroughputSettings, GenerationTimeSettings
from experiments.config.run_schema import INITIAL
from experiments.evaluation.peak_memory import peak_memory_bytes
from experiments.evaluation.trained_models import trained_language_model
from experiments.run_metrics import PARAMETERS_METRIC
from experiments.training.train import training_checkpoint
from models.generation import greedy_generate, initial_state, needed_capacity

MIB = 2**20
AT_END = 8  # generation/ms_per_token_at_end: the last 1/AT_END of the steps


def run_generation_time(config: DictConfig, run_dir: Path) -> dict[str, float]:
    settings = GenerationTimeSettings(**OmegaConf.to_container(config.evaluate.settings))
    started = time.perf_counter()
    model, device, trained = evaluated_model(config, run_dir, settings.precision)
    prompt = random_prompt(config, model, settings.batch_size, settings.prefill, device)
    capacity = needed_capacity(settings.prefill, settings.length)
    greedy_generate(model, prompt, settings.warmup, cache_capacity=capacity)
    _, memory = peak_memory_bytes(lambda: greedy_generate(model, prompt, 2, cache_capacity=capacity), device)
    start, token_times = timed_generation(model, prompt, settings.length, capacity, device)
    steps = np.diff(token_times)  # (length - 1,) seconds of each decoding step
    metrics = {
        "generation/seconds": token_times[-1] - start,
        "generation/ms_per_token": 1000 * float(np.median(steps)) if len(steps) else math.nan,
        "generation/ms_per_token_at_end": 1000 * float(np.median(steps[-max(1, len(steps) // AT_END) :]))
        if len(steps)
        else math.nan,
        "generation/memory_mib": memory / MIB,
    }
    return metrics | common_metrics(model, trained, started)


def run_decoding_throughput(config: DictConfig, run_dir: Path) -> dict[str, float]:
    settings = DecodingThroughputSettings(**OmegaConf.to_container(config.evaluate.settings))
    started = time.perf_counter()
    wants_gpu = config.trainer.accelerator != "cpu" and torch.cuda.is_available()
    if settings.memory_limit_mib is None and not wants_gpu:
        raise ValueError(
            "decoding_throughput on a CPU needs evaluate.settings.memory_limit_mib (the memory the "
            "model may use, in MiB); null takes the GPU's memory"
        )
    model, device, trained = evaluated_model(config, run_dir, settings.precision)
    limit = (
        settings.memory_limit_mib * MIB
        if settings.memory_limit_mib is not None
        else torch.cuda.get_device_properties(device).total_memory
    )
    weights = sum(parameter.numel() * parameter.element_size() for parameter in model.parameters())
    capacity = needed_capacity(settings.prefill, settings.length)
    state_bytes = settings.batch_size * state_size_bytes(model, capacity, device)
    metrics = {
        "throughput/tokens_per_second": math.nan,
        "throughput/memory_mib": (weights + state_bytes) / MIB,
        "throughput/out_of_memory": 1.0,
    }
    if weights + state_bytes <= limit:
        prompt = random_prompt(config, model, settings.batch_size, settings.prefill, device)
        try:
            _, peak = peak_memory_bytes(lambda: greedy_generate(model, prompt, 2, cache_capacity=capacity), device)
            metrics["throughput/memory_mib"] = (weights + peak) / MIB
            if weights + peak <= limit:
                greedy_generate(model, prompt, settings.warmup, cache_capacity=capacity)
                _, token_times = timed_generation(model, prompt, settings.length, capacity, device)
                decoded = settings.batch_size * (settings.length - 1)
                metrics["throughput/tokens_per_second"] = decoded / decoding_seconds(token_times)
                metrics["throughput/out_of_memory"] = 0.0
        except torch.OutOfMemoryError:  # the GPU's own limit, below the configured one
            metrics["throughput/memory_mib"] = limit / MIB
    metrics["throughput/memory_limit_mib"] = limit / MIB
    return metrics | common_metrics(model, trained, started)


def evaluated_model(config: DictConfig, run_dir: Path, precision: str) -> tuple[torch.nn.Module, torch.device, dict]:
    """The run's model (its training run's checkpoint, or its initial weights), in the precision's dtype, and the
    training run's metrics (none at the initial weights); TrainingRunMissing before any compute."""
    if config.evaluate.checkpoint == INITIAL:
        checkpoint, trained = None, {}
    else:
        checkpoint, result = training_checkpoint(config, run_dir)
        trained = result["metrics"]
    model, device = trained_language_model(config, checkpoint)
    if precision == "bf16-true":
        model = model.to(torch.bfloat16)
    return model, device, trained


def random_prompt(
    config: DictConfig, model: torch.nn.Module, batch: int, length: int, device: torch.device
) -> torch.Tensor:
    """(batch, length) token ids drawn from the run's seed: the same prompt for every model of one vocabulary."""
    vocabulary = model.lm_head.out_features
    generator = torch.Generator().manual_seed(config.seed)
    return torch.randint(vocabulary, (batch, length), generator=generator).to(device)


def timed_generation(
    model: torch.nn.Module, prompt: torch.Tensor, length: int, capacity: int, device: torch.device
) -> tuple[float, list[float]]:
    """The time before the prefill and the time each of ``length`` new tokens is chosen (perf_counter seconds):
    the first after the prefill, each later one a step later."""
    token_times = []

    def on_token(_: int) -> None:
        synchronize(device)
        token_times.append(time.perf_counter())

    synchronize(device)
    start = time.perf_counter()
    greedy_generate(model, prompt, length, cache_capacity=capacity, on_token=on_token)
    return start, token_times


def decoding_seconds(token_times: list[float]) -> float:
    """From the first new token (the prefill's) to the last: the time of the length - 1 decoding steps."""
    return token_times[-1] - token_times[0] if len(token_times) > 1 else math.nan


def state_size_bytes(model: torch.nn.Module, capacity: int, device: torch.device) -> int:
    """The bytes of one sequence's state before the first token (a static cache holds its capacity already)."""
    with torch.inference_mode():
        state = initial_state(model, 1, capacity)
    return sum(leaf.numel() * leaf.element_size() for leaf in tree_leaves(state) if isinstance(leaf, torch.Tensor))


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def common_metrics(model: torch.nn.Module, trained: dict, started: float) -> dict[str, float]:
    metrics = {f"trained/{metric}": value for metric, value in trained.items()}
    return metrics | {
        PARAMETERS_METRIC: float(sum(parameter.numel() for parameter in model.parameters())),
        "train/steps": 0.0,
        "eval/seconds": time.perf_counter() - started,
    }
