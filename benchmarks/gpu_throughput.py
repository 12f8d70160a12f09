"""Training throughput of every language model on one GPU, measured in one run, with Llama as the peer.

    python -m benchmarks.run --only gpu [--budget-seconds N]

Each model at its 125M preset (the smallest where the paper trains it at 350M only), batch 16, context 2048, one
warm-up step then the median of three, in a child process of its own (benchmarks.gpu_training_step: the paper's
precision per model, fused AdamW, eager; a batch that does not fit is split into micro-batches with accumulation; a
crash, hang or out-of-memory error is that model's row, not a lost run). Per model: tokens/s; model FLOP utilisation
(MFU) = training FLOPs per token (models.flops: 3 x forward, the model FLOPs of PaLM's MFU) x tokens/s / the
device's dense bfloat16 peak (NVIDIA's data sheets, DEVICE_PEAKS); peak memory allocated; and tokens/s against Llama
125M measured in the same run. Llama runs first, then the models of FIRST, then the others, until the time budget is
spent; the rest are rows saying so (``--models`` measures some of them in a later run). Results:
results/reports/gpu_throughput.csv, written after each model (a run replaces its device's rows and keeps other
devices'), read by ``xlstm-suite sweep --dry-run`` for its GPU-hours.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import torch

from benchmarks.comparison import Comparison
from benchmarks.gpu_children import OK
from benchmarks.gpu_training_step import StepSetting, measure_in_child
from experiments.atomic import write_text_atomic
from experiments.sweeps.compute_estimate import MEASURED_THROUGHPUT
from models.catalog import language_model_sizes
from models.flops import flops_per_token
from models.registry import known_language_models
from models.xlstm.presets import GPT2_VOCAB_PADDED

BATCH, CONTEXT = 16, 2048
REFERENCE = "llama"
# measured first: the peer, the xLSTMs, and the baselines whose rates the shared GPU notes give (RWKV-4/5, Mamba)
FIRST = (REFERENCE, "xlstm_1_0", "xlstm_7_1", "rwkv5", "rwkv4", "mamba")
# Dense bfloat16 peaks in TFLOP/s (NVIDIA's data sheets, without sparsity) by the first part a device's name holds: the
# SXM boards of H100 and H200 989, H100 PCIe 756, A100 312; the NVL boards are left unlisted (None: no MFU)
DEVICE_PEAKS = (("NVL", None), ("H100 PCIe", 756.0), ("H200", 989.0), ("H100", 989.0), ("A100", 312.0))
PER_MODEL_SECONDS = 240.0  # a model's child: build, compile its kernels and probes, four steps
MIN_CHILD_SECONDS = 20.0  # a budget with less left starts no further child
COLUMNS = (
    "device",
    "model",
    "size",
    "batch",
    "context",
    "micro_batch",
    "precision",
    "tokens_per_s",
    "step_ms",
    "training_flops_per_token",
    "peak_tflops",
    "mfu",
    "peak_memory_gib",
    "ratio_to_llama",
    "status",
    "torch",
)


def device_peak_tflops(device_name: str) -> float | None:
    """The dense bf16 peak of a device by its name (torch.cuda.get_device_name), None for a device not listed."""
    return next((peak for part, peak in DEVICE_PEAKS if part in device_name), None)  # None: not listed


def smallest_size(model: str) -> str:
    sizes = known_language_models()[model]
    return "125m" if "125m" in sizes else sizes[0]


def settings(models: list[str] | None = None) -> list[StepSetting]:
    """Llama first (the peer), then ``models`` (default: every language model) at their smallest presets, those of
    FIRST before the others."""
    known = list(known_language_models())
    unknown = sorted(set(models or []) - set(known))
    if unknown:
        raise ValueError(f"unknown language models {unknown}; valid choices: {known}")
    chosen = sorted(
        set(models or known) | {REFERENCE},
        key=lambda model: (FIRST.index(model) if model in FIRST else len(FIRST), known.index(model)),
    )
    return [StepSetting(model, smallest_size(model), BATCH, CONTEXT) for model in chosen]


def training_flops_per_token(model: str, size: str, context: int) -> float:
    preset = language_model_sizes()[model][size]
    return flops_per_token(
        model,
        preset["embedding_dim"],
        preset["num_blocks"],
        preset["options"],
        sequence_length=context,
        output_size=GPT2_VOCAB_PADDED,
    ).training


def measure_within_budget(
    plan: list[StepSetting],
    budget_seconds: float,
    measure: Callable[[StepSetting, float], dict] = measure_in_child,
    clock: Callable[[], float] = time.monotonic,
    per_model_seconds: float = PER_MODEL_SECONDS,
    progress: Callable[[list], None] = lambda results: None,
) -> list[tuple[StepSetting, dict]]:
    """Each setting's result in order, each child limited to what is left of ``budget_seconds``; those the budget
    does not reach get {"status": "not run: ..."}. ``progress`` gets the results so far after each measurement."""
    started = clock()
    results = []
    for setting in plan:
        left = budget_seconds - (clock() - started)
        if left < MIN_CHILD_SECONDS:
            results.append((setting, {"status": f"not run: the {budget_seconds:.0f} s budget was spent"}))
            continue
        results.append((setting, measure(setting, min(per_model_seconds, left))))
        print(f"  {setting.describe()}: {describe_result(results[-1][1])}", flush=True)
        progress(results)
    return results


def describe_result(result: dict) -> str:
    if result["status"] != OK:
        return result["status"]
    return f"{result['tokens_per_second']:,.0f} tokens/s, micro-batch {result['micro_batch']}"


@dataclass(frozen=True)
class Device:
    name: str
    peak_tflops: float | None  # dense bf16, None where DEVICE_PEAKS does not list the device
    torch_version: str


def throughput_rows(results: list[tuple[StepSetting, dict]], device: Device) -> list[dict]:
    """One row per model (COLUMNS): its rate, MFU, memory and ratio to the reference measured in the same run."""
    reference = next(
        (result for setting, result in results if setting.model == REFERENCE and result["status"] == OK), None
    )
    rows = []
    for setting, result in results:
        flops = training_flops_per_token(setting.model, setting.size, setting.context)
        row = {
            "device": device.name,
            "model": setting.model,
            "size": setting.size,
            "batch": setting.batch,
            "context": setting.context,
            "training_flops_per_token": round(flops),
            "peak_tflops": device.peak_tflops,
            "status": result["status"],
            "torch": device.torch_version,
            "precision": result.get("precision"),
        }
        if result["status"] == OK:
            rate = result["tokens_per_second"]
            row |= {
                "micro_batch": result["micro_batch"],
                "tokens_per_s": round(rate),
                "step_ms": round(result["step_seconds"] * 1e3, 1),
                "peak_memory_gib": round(result["peak_memory_bytes"] / 2**30, 2),
                "mfu": None if device.peak_tflops is None else round(flops * rate / (device.peak_tflops * 1e12), 4),
                "ratio_to_llama": None if reference is None else round(rate / reference["tokens_per_second"], 3),
            }
        rows.append({column: row.get(column) for column in COLUMNS})
    return rows


def comparisons(rows: list[dict]) -> list[Comparison]:
    """Every measured model's tokens/s against Llama's, for benchmarks.run's table (Llama's own row left out)."""
    reference = next((row for row in rows if row["model"] == REFERENCE and row["status"] == OK), None)
    if reference is None:
        return []
    return [
        Comparison(
            f"GPU training step {row['model']} {row['size']}",
            f"B={row['batch']} S={row['context']} bf16, {row['device']}",
            "tokens/s",
            row["tokens_per_s"],
            f"Llama {reference['size']} (same run)",
            reference["tokens_per_s"],
        )
        for row in rows
        if row["status"] == OK and row["model"] != REFERENCE
    ]


def with_other_devices(rows: list[dict], destination: Path) -> pd.DataFrame:
    """``rows`` after the rows of the other devices already in ``destination``: a run replaces its device's rows."""
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    if not destination.exists():
        return table
    existing = pd.read_csv(destination, dtype=str, keep_default_na=False)
    kept = existing[~existing["device"].isin(table["device"])]
    return pd.concat([kept, table.astype(object).where(table.notna(), "")], ignore_index=True)


def gpu_comparisons(
    budget_seconds: float, models: list[str] | None = None, destination: Path = MEASURED_THROUGHPUT
) -> list[Comparison]:
    """Section ``gpu`` of benchmarks.run: measure, write ``destination``, return the ratios to Llama."""
    if not torch.cuda.is_available():
        raise RuntimeError("benchmarks.gpu_throughput needs a CUDA device (torch.cuda.is_available() is False)")
    name = torch.cuda.get_device_name()
    device = Device(name, device_peak_tflops(name), torch.__version__)
    if device.peak_tflops is None:
        print(f"  no dense bf16 peak listed for {name!r} (benchmarks.gpu_throughput.DEVICE_PEAKS): MFU left empty")

    def write(results: list[tuple[StepSetting, dict]]) -> list[dict]:
        rows = throughput_rows(results, device)
        write_text_atomic(destination, with_other_devices(rows, destination).to_csv(index=False))
        return rows

    rows = write(measure_within_budget(settings(models), budget_seconds, progress=write))  # after each model too
    print(f"  wrote {destination}")
    return comparisons(rows)
