"""What a sweep's runs would cost, for ``sweep --dry-run``: per run its training tokens, its training FLOPs (from its
model's architecture: models.flops) and the GPU-hours those take on a stated GPU at a stated utilisation.

An estimate, not a measurement: tokens are max_steps x batch_size x the training sequence length (an upper bound for
tasks of variable length); FLOPs are 3 x the forward FLOPs per token x tokens (models.flops); an evaluation-only run
costs the forward FLOPs of the sets it evaluates (those its evaluation kind says it runs through the model); the validation and test passes of training runs are not counted.
"""

from dataclasses import dataclass

from omegaconf import DictConfig, OmegaConf

from experiments.config.evaluation_kinds import evaluated_tokens
from experiments.config.validation import backbone_options
from tasks.registry import task_spec
from tasks.spec import SEQUENCES_PER_SAMPLE

SECONDS_PER_HOUR = 3600


@dataclass(frozen=True)
class Accelerator:
    """The GPU the GPU-hours assume: its dense peak throughput and the model FLOPs utilisation (MFU) a run reaches on
    it. The default is an A100's bf16 dense peak (312 TFLOP/s) at an assumed 40% (PaLM reports 46% on TPUs; small
    models and recurrent kernels reach less: the number is a stated assumption, not a measurement)."""

    name: str = "A100 bf16"
    peak_tflops: float = 312.0
    utilization: float = 0.4

    def __post_init__(self):
        if not self.peak_tflops > 0:
            raise ValueError(f"--gpu-tflops={self.peak_tflops:g} must be positive (e.g. 312 for an A100 in bf16)")
        if not 0 < self.utilization <= 1:
            raise ValueError(f"--utilization={self.utilization:g} must be in (0, 1] (a fraction of the peak, e.g. 0.4)")

    def gpu_hours(self, flops: float) -> float:
        return flops / (self.peak_tflops * 1e12 * self.utilization) / SECONDS_PER_HOUR

    def describe(self) -> str:
        return f"{self.name} ({self.peak_tflops:g} TFLOP/s) at {self.utilization:.0%} utilisation"


@dataclass(frozen=True)
class RunCompute:
    """One run's training tokens, the tokens an evaluation-only run evaluates (forward only) and the FLOPs of both;
    tokens and flops are None where the task config gives no sequence length."""

    tokens: int | None
    flops: float | None
    evaluated_tokens: int = 0
    unestimated: str | None = None  # an evaluation kind whose tokens are not known before its data is read


def run_compute(config: DictConfig) -> RunCompute:
    """The compute of one resolved run config: a training run's training tokens x 3 x the forward FLOPs per token;
    an evaluation-only run trains nothing and costs the forward FLOPs of its validation and test sets."""
    spec = task_spec(OmegaConf.to_container(config.task, resolve=True))
    length = training_length(config) or spec.fixed_length
    if length is None:
        return RunCompute(None, None)
    from models.flops import flops_per_token  # torch: imported once the plan is valid, only to estimate

    per_token = flops_per_token(
        config.model.name, config.model.embedding_dim, config.model.num_blocks, backbone_options(config.model),
        sequence_length=length, output_size=spec.num_classes,
        input_features=None if spec.input_kind == "tokens" else spec.input_size,
    )
    evaluate = OmegaConf.select(config, "evaluate")
    if evaluate is not None:
        evaluate = OmegaConf.to_container(evaluate)
        if evaluate.get("kind") is None:
            evaluated = evaluation_sequences(config) * length
        else:
            evaluated = evaluated_tokens(evaluate, OmegaConf.to_container(config.task, resolve=True))
        if evaluated is None:
            return RunCompute(0, 0.0, unestimated=evaluate["kind"])
        return RunCompute(0, per_token.forward * evaluated, evaluated)
    sequences = config.trainer.max_steps * config.trainer.batch_size * SEQUENCES_PER_SAMPLE.get(spec.output_kind, 1)
    tokens = sequences * length
    return RunCompute(tokens, per_token.training * tokens)


LENGTH_KEYS = ("train_max_length", "sequence_length", "context_length", "max_length")  # the first a task config has
EVALUATION_SET_KEYS = (("val_samples", "test_samples"), ("val_sequences", "test_sequences"))


def training_length(config: DictConfig) -> int | None:
    """The task's longest training sequence: its fixed length, or the upper bound of its variable lengths."""
    return next((length for key in LENGTH_KEYS if (length := OmegaConf.select(config, f"task.{key}"))), None)


def evaluation_sequences(config: DictConfig) -> int:
    """The sequences an evaluation-only run without a kind evaluates: its task's validation and test sets (0 if it
    names none)."""
    for keys in EVALUATION_SET_KEYS:
        sizes = [OmegaConf.select(config, f"task.{key}") for key in keys]
        if all(size is not None for size in sizes):
            return sum(sizes)
    return 0


def estimate_text(computes: list[RunCompute], accelerator: Accelerator) -> str:
    """The totals of the runs a sweep would run: tokens, FLOPs and GPU-hours, each with how it is computed."""
    known = [compute for compute in computes if compute.tokens is not None]
    tokens = sum(compute.tokens for compute in known)
    flops = sum(compute.flops for compute in known)
    text = (
        f"Compute estimate (an estimate, not a measurement) for the {len(computes)} pending, failed and damaged runs: "
        f"{tokens:.3g} training tokens = max_steps x batch_size x training sequence length "
        "(train_max_length or max_length: an upper bound for tasks of variable length), summed over runs; "
        "runs of models that are not available are not counted."
    )
    if len(known) < len(computes):
        text += f" {len(computes) - len(known)} runs have no sequence length in their task config and are left out."
    lines = [
        text,
        f"  FLOPs: {flops:.3g} = 3 x forward FLOPs per token x training tokens, summed over runs (forward: 2 x the "
        "model's matmul parameters + the sequence mixing, attention over the full S x S square + the input and output "
        "maps; see models/flops.py)",
        f"  GPU-hours: {accelerator.gpu_hours(flops):.3g} on {accelerator.describe()} = FLOPs / "
        f"({accelerator.peak_tflops:g}e12 FLOP/s x {accelerator.utilization:g}) / 3600",
        "  not counted: the validation and test passes of training runs",
    ]
    evaluating = [compute for compute in known if compute.evaluated_tokens]
    if evaluating:
        lines.insert(2, f"  of which evaluation-only runs ({len(evaluating)}): forward FLOPs per token x "
                        f"{sum(compute.evaluated_tokens for compute in evaluating):.3g} evaluated tokens (their "
                        "validation and test sets, or what their evaluation kind runs through the model)")
    unestimated = [compute.unestimated for compute in known if compute.unestimated]
    if unestimated:
        lines.append(f"  not counted: {len(unestimated)} evaluation-only runs of kinds {sorted(set(unestimated))}, "
                     "whose tokens are known only once their data is read")
    return "\n".join(lines)
