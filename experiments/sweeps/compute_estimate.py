"""What a sweep's runs would cost, for ``sweep --dry-run``: per run its training tokens, its training FLOPs (from its
model's architecture: models.flops) and the GPU-hours those take on a stated GPU at a stated utilisation, or at the
model FLOP utilisation measured for the run's model (results/reports/gpu_throughput.csv, written by
``python -m benchmarks.run --only gpu``) where there is one.

An estimate, not a measurement: tokens are max_steps x batch_size x the training sequence length (an upper bound for
tasks of variable length); FLOPs are 3 x the forward FLOPs per token x tokens (models.flops); an evaluation-only run
costs the forward FLOPs of the sets it evaluates (those its evaluation kind says it runs through the model); the validation and test passes of training runs are not counted.
"""

import csv
from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from experiments.config.evaluation_kinds import evaluated_tokens
from experiments.paths import REPORTS, REPOSITORY_ROOT
from experiments.sweeps.flops_cache import flops_per_token
from tasks.registry import task_spec
from tasks.spec import SEQUENCES_PER_SAMPLE

SECONDS_PER_HOUR = 3600
# The measured training throughput per device and model (benchmarks.gpu_throughput writes it): the columns read here.
MEASURED_THROUGHPUT = REPORTS / "gpu_throughput.csv"
MEASURED_COLUMNS = ("device", "model", "status", "mfu", "peak_tflops")


@dataclass(frozen=True)
class MeasuredRate:
    """A model's model FLOP utilisation (MFU) measured on ``device``, whose dense bf16 peak the MFU is a fraction of
    (benchmarks.gpu_throughput: the 125M preset or the smallest, batch 16, context 2048, bf16)."""

    model: str
    device: str
    utilization: float
    peak_tflops: float


@dataclass(frozen=True)
class Accelerator:
    """The GPU the GPU-hours assume: its dense peak throughput and the model FLOPs utilisation (MFU) a run reaches on
    it. The default is an A100's bf16 dense peak (312 TFLOP/s) at an assumed 40% (PaLM reports 46% on TPUs; small
    models and recurrent kernels reach less: the number is a stated assumption, not a measurement)."""

    name: str = "A100 bf16"
    peak_tflops: float = 312.0
    utilization: float = 0.4
    measured: tuple[MeasuredRate, ...] = ()  # rates measured on this GPU: their models run at their MFU
    source: str = ""  # the file the measured rates come from

    def __post_init__(self):
        if not self.peak_tflops > 0:
            raise ValueError(f"--gpu-tflops={self.peak_tflops:g} must be positive (e.g. 312 for an A100 in bf16)")
        if not 0 < self.utilization <= 1:
            raise ValueError(f"--utilization={self.utilization:g} must be in (0, 1] (a fraction of the peak, e.g. 0.4)")

    def measured_rate(self, model: str | None) -> MeasuredRate | None:
        return next((rate for rate in self.measured if rate.model == model), None)

    def gpu_hours(self, flops: float, model: str | None = None) -> float:
        """``flops`` at the model FLOP/s measured for ``model`` on this GPU (its MFU x the peak it was measured
        against) where there is one, else at ``utilization`` x ``peak_tflops``."""
        rate = self.measured_rate(model)
        flops_per_second = (
            self.peak_tflops * 1e12 * self.utilization if rate is None else rate.peak_tflops * 1e12 * rate.utilization
        )
        return flops / flops_per_second / SECONDS_PER_HOUR

    def describe(self) -> str:
        text = f"{self.name} ({self.peak_tflops:g} TFLOP/s) at {self.utilization:.0%} utilisation"
        return text + (" where no MFU is measured" if self.measured else "")

    def utilizations(self, models: list[str]) -> str:
        """Which utilisation the GPU-hours of ``models`` assume: "measured MFU on NVIDIA H200
        (results/reports/gpu_throughput.csv): 31% for xlstm_1_0; 40% (assumed) for mamba"."""
        measured = {model: rate for model in sorted(set(models)) if (rate := self.measured_rate(model)) is not None}
        parts = []
        if measured:
            per_model = ", ".join(f"{rate.utilization:.0%} for {model}" for model, rate in measured.items())
            parts.append(f"measured MFU on {self.name} ({self.source}): {per_model}")
        assumed = sorted(set(models) - set(measured))
        if assumed:
            parts.append(f"{self.utilization:.0%} (assumed) for {', '.join(assumed)}")
        return "; ".join(parts)


def measured_rates(path: Path | None = None) -> dict[str, list[MeasuredRate]]:
    """Device -> the rates measured on it, from the rows of ``path`` (default: MEASURED_THROUGHPUT) that measured a
    model (status ok, an MFU); {} without the file."""
    path = path or MEASURED_THROUGHPUT
    if not path.exists():
        return {}
    with path.open(newline="") as file:
        rows = list(csv.DictReader(file))
    missing = [column for column in MEASURED_COLUMNS if rows and column not in rows[0]]
    if missing:
        raise ValueError(f"{path} lacks the columns {missing} (written by python -m benchmarks.run --only gpu)")
    rates: dict[str, list[MeasuredRate]] = {}
    for row in rows:
        if row["status"] == "ok" and row["mfu"] and row["peak_tflops"]:
            rates.setdefault(row["device"], []).append(
                MeasuredRate(row["model"], row["device"], float(row["mfu"]), float(row["peak_tflops"]))
            )
    return rates


def command_line_accelerator(
    gpu_name: str | None, gpu_tflops: float | None, utilization: float | None, path: Path | None = None
) -> Accelerator:
    """The dry run's GPU from ``--gpu-name``, ``--gpu-tflops`` and ``--utilization`` (None: not given) and the rates
    measured in ``path`` (default: MEASURED_THROUGHPUT): the measured device that ``--gpu-name`` names (a part of its
    name, e.g. "H200"), or without it the one device measured; the models measured on it at their measured rate, the
    others at ``--utilization`` of its peak (or of --gpu-tflops). Without a measured device to use (none measured,
    none that ``--gpu-name`` names, or several measured and none named), the stated GPU at the stated utilisation
    (defaults: Accelerator's). ValueError where ``--gpu-name`` names several measured devices."""
    default, path = Accelerator(), path or MEASURED_THROUGHPUT
    rates = measured_rates(path)
    if gpu_name is None:
        devices = list(rates) if len(rates) == 1 else []
    else:
        devices = [device for device in rates if gpu_name.lower() in device.lower()]
        if len(devices) > 1:
            raise ValueError(
                f"--gpu-name {gpu_name!r} matches several devices measured in {path}: {devices}; name one of them"
            )
    if not devices:
        return Accelerator(
            _given(gpu_name, default.name),
            _given(gpu_tflops, default.peak_tflops),
            _given(utilization, default.utilization),
        )
    device_rates = rates[devices[0]]
    try:
        source = str(path.relative_to(REPOSITORY_ROOT))
    except ValueError:
        source = str(path)
    return Accelerator(
        devices[0],
        _given(gpu_tflops, device_rates[0].peak_tflops),
        _given(utilization, default.utilization),
        tuple(device_rates),
        source,
    )


def _given(value, default):
    return default if value is None else value


@dataclass(frozen=True)
class RunCompute:
    """One run's training tokens, the tokens an evaluation-only run evaluates (forward only) and the FLOPs of both;
    tokens and flops are None where the task config gives no sequence length."""

    tokens: int | None
    flops: float | None
    evaluated_tokens: int = 0
    unestimated: str | None = None  # an evaluation kind whose tokens are not known before its data is read
    model: str | None = None  # the run's model (its measured MFU, where there is one, gives its GPU-hours)


def run_compute(config: DictConfig | dict) -> RunCompute:
    """The compute of one resolved run config (an OmegaConf config or its plain containers, as a planned run keeps
    it: experiments.config.planned_run): a training run's training tokens x 3 x the forward FLOPs per token; an
    evaluation-only run trains nothing and costs the forward FLOPs of its validation and test sets."""
    if isinstance(config, DictConfig):
        config = OmegaConf.to_container(config, resolve=True)
    task, model = config["task"], config["model"]
    spec = task_spec(task)
    length = training_length(task) or spec.fixed_length
    if length is None:
        return RunCompute(None, None, model=model["name"])
    forward, training = flops_per_token(  # models.flops (torch) once per model config: experiments.sweeps.flops_cache
        model["name"],
        model["embedding_dim"],
        model["num_blocks"],
        model.get("options") or {},
        sequence_length=length,
        output_size=spec.num_classes,
        input_features=None if spec.input_kind == "tokens" else spec.input_size,
    )
    evaluate = config.get("evaluate")
    if evaluate is not None:
        if evaluate.get("kind") is None:
            evaluated = evaluation_sequences(task) * length
        else:
            evaluated = evaluated_tokens(evaluate, task)
        if evaluated is None:
            return RunCompute(0, 0.0, unestimated=evaluate["kind"], model=model["name"])
        return RunCompute(0, forward * evaluated, evaluated, model=model["name"])
    trainer = config["trainer"]
    sequences = trainer["max_steps"] * trainer["batch_size"] * SEQUENCES_PER_SAMPLE.get(spec.output_kind, 1)
    tokens = sequences * length
    return RunCompute(tokens, training * tokens, model=model["name"])


LENGTH_KEYS = ("train_max_length", "sequence_length", "context_length", "max_length")  # the first a task config has
EVALUATION_SET_KEYS = (("val_samples", "test_samples"), ("val_sequences", "test_sequences"))


def training_length(task: dict) -> int | None:
    """The task's longest training sequence: its fixed length, or the upper bound of its variable lengths."""
    return next((length for key in LENGTH_KEYS if (length := task.get(key))), None)


def evaluation_sequences(task: dict) -> int:
    """The sequences an evaluation-only run without a kind evaluates: its task's validation and test sets (0 if it
    names none)."""
    for keys in EVALUATION_SET_KEYS:
        sizes = [task.get(key) for key in keys]
        if all(size is not None for size in sizes):
            return sum(sizes)
    return 0


def estimate_text(computes: list[RunCompute], accelerator: Accelerator) -> str:
    """The totals of the runs a sweep would run: tokens, FLOPs and GPU-hours, each with how it is computed."""
    known = [compute for compute in computes if compute.tokens is not None]
    tokens = sum(compute.tokens for compute in known)
    flops = sum(compute.flops for compute in known)
    hours = sum(accelerator.gpu_hours(compute.flops, compute.model) for compute in known)
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
        gpu_hours_line(hours, accelerator, [compute.model for compute in known]),
        "  not counted: the validation and test passes of training runs",
    ]
    evaluating = [compute for compute in known if compute.evaluated_tokens]
    if evaluating:
        lines.insert(
            2,
            f"  of which evaluation-only runs ({len(evaluating)}): forward FLOPs per token x "
            f"{sum(compute.evaluated_tokens for compute in evaluating):.3g} evaluated tokens (their "
            "validation and test sets, or what their evaluation kind runs through the model)",
        )
    unestimated = [compute.unestimated for compute in known if compute.unestimated]
    if unestimated:
        lines.append(
            f"  not counted: {len(unestimated)} evaluation-only runs of kinds {sorted(set(unestimated))}, "
            "whose tokens are known only once their data is read"
        )
    return "\n".join(lines)


def gpu_hours_line(hours: float, accelerator: Accelerator, models: list[str | None]) -> str:
    text = f"  GPU-hours: {hours:.3g} on {accelerator.describe()} = FLOPs / "
    if not accelerator.measured:
        return text + f"({accelerator.peak_tflops:g}e12 FLOP/s x {accelerator.utilization:g}) / 3600"
    return text + (
        f"(peak FLOP/s x the utilisation of the run's model) / 3600, summed over runs; "
        f"{accelerator.utilizations([model for model in models if model is not None])}"
    )
