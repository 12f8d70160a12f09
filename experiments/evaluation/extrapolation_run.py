"""The ``context_extrapolation`` evaluation kind's run: a finished language-model training run scored on validation
sequences longer than those it was trained on (Figure spaj300B_seq_extrapolation: perplexity per length, its table
at 16k).

At the run's context length L (its ``task.context_length``, set by the evaluating artifact's grid) and the settings
of ``evaluate.settings`` (experiments.config.evaluation_kinds.ContextExtrapolationSettings): the first ``tokens``
validation tokens of the training run's corpus as ``tokens / L`` sequences of L tokens (the task's own validation
sequences at context length L: consecutive windows, so every length scores the same tokens), scored ``batch_size``
at a time, every position's next token. A model whose state does not grow with the tokens seen runs chunk by chunk
with its state carried (models.chunked_forward), any other (a Transformer) the whole sequence at once. Its metrics,
result.json's: ``extrapolation/perplexity``, ``extrapolation/memory_mib`` (the peak memory of scoring the batch that
needed most: the experiments.evaluation.peak_memory measure), ``extrapolation/tokens``, ``extrapolation/chunked`` (1
chunked, 0 one pass), the training run's metrics prefixed ``trained/``, ``train/steps`` 0 and ``eval/seconds``.
"""

import math
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from omegaconf import DictConfig, OmegaConf

from experiments.config.evaluation_kinds import ContextExtrapolationSettings
from experiments.evaluation.peak_memory import peak_memory_bytes
from experiments.evaluation.trained_models import precision_context, trained_language_model
from experiments.training.train import training_checkpoint
from models.chunked_forward import chunked_logits, state_grows
from tasks.registry import validation_sequences as task_validation_sequences

MIB = 2**20


def run_context_extrapolation(config: DictConfig, run_dir: Path) -> dict[str, float]:
    """Score the training run's checkpoint at the run's context length; TrainingRunMissing before any compute if it
    is not there."""
    checkpoint, trained = training_checkpoint(config, run_dir)
    settings = ContextExtrapolationSettings(**OmegaConf.to_container(config.evaluate.settings))
    started = time.perf_counter()
    inputs, targets = validation_sequences(config, settings.sequences(config.task.context_length))  # before the model
    model, device = trained_language_model(config, checkpoint)
    chunk = None if state_grows(model) else settings.chunk
    total, peak = 0.0, 0
    for batch_inputs, batch_targets in zip(inputs.split(settings.batch_size), targets.split(settings.batch_size)):
        batch_inputs, batch_targets = batch_inputs.to(device), batch_targets.to(device)  # (B, L) each

        def score() -> float:
            with torch.no_grad(), precision_context(settings.precision, device):
                return negative_log_likelihood(model, batch_inputs, batch_targets, chunk)  # noqa: B023 (called in this iteration)

        nll, used = peak_memory_bytes(score, device)
        total, peak = total + nll, max(peak, used)
    metrics = {
        "extrapolation/perplexity": math.exp(total / targets.numel()),
        "extrapolation/memory_mib": peak / MIB,
        "extrapolation/tokens": float(targets.numel()),
        "extrapolation/chunked": float(chunk is not None),
    }
    metrics |= {f"trained/{metric}": value for metric, value in trained["metrics"].items()}
    metrics["train/steps"] = 0.0
    metrics["eval/seconds"] = time.perf_counter() - started
    return metrics


def validation_sequences(config: DictConfig, count: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and targets (count, L) each: the first ``count`` validation sequences of the run's task, a task of text
    (its family's, tasks.registry.validation_sequences), at its context length L (ValueError naming the setting when
    its validation part is too short, or the families of text when the task is of none)."""
    return task_validation_sequences(OmegaConf.to_container(config.task, resolve=True), count)


def negative_log_likelihood(model, inputs: torch.Tensor, targets: torch.Tensor, chunk: int | None) -> float:
    """The summed negative log-likelihood (nats) of ``targets`` (B, L) given ``inputs`` (B, L): chunk by chunk of
    ``chunk`` tokens with the state carried, or in one pass when ``chunk`` is None."""
    pieces = chunked_logits(model, inputs, chunk) if chunk is not None else [model(inputs)]
    total, start = 0.0, 0
    for logits in pieces:  # (B, C, V)
        end = start + logits.shape[1]
        total += float(F.cross_entropy(logits.float().flatten(0, 1), targets[:, start:end].flatten(), reduction="sum"))
        start = end
    return total
