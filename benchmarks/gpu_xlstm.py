"""xLSTM on a GPU, in one run: the language-model training step of xLSTM[1:0], xLSTM[7:1] and Llama, and the mLSTM
kernel grid.

    python -m benchmarks.run --only gpu_xlstm [--budget-seconds N]

The LM step (benchmarks.gpu_training_step, each model in a child process): xLSTM[1:0], xLSTM[7:1] and Llama at
their 125M and 350M presets, contexts 2048 and 8192 at B x S = 32,768 tokens (batch 16 and 4), bfloat16 autocast,
fused AdamW, eager: tokens/s, peak memory, and tokens/s against Llama at the same size and context. It gets
LM_SHARE of the time budget, in order (125M first); what it does not reach is a row saying so.

The mLSTM kernel grid (benchmarks.gpu_kernels.mlstm_kernel_grid: our Triton kernels against TFLA, our torch backend
and SDPA at B x S = 32,768, S 2048, 8192, 16384, head dims 128, 256, 384, forward and forward + backward), in a
child process given the rest of the budget; a backend it skips at a shape is a row with the reason.

Both go to results/reports/gpu_xlstm.csv with the device name (written after each part; a run replaces its
device's rows and keeps other devices').
"""

import argparse
import contextlib
import io
import json
import re
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import pandas as pd
import torch

from benchmarks.comparison import Comparison
from benchmarks.gpu_children import OK, run_child
from benchmarks.gpu_throughput import MIN_CHILD_SECONDS, Device, device_peak_tflops, measure_within_budget
from benchmarks.gpu_training_step import StepSetting, measure_in_child
from experiments.atomic import write_text_atomic
from experiments.paths import REPORTS

TOKENS_PER_STEP = 32_768
SIZES, CONTEXTS = ("125m", "350m"), (2048, 8192)
MODELS = ("llama", "xlstm_1_0", "xlstm_7_1")  # Llama first: the peer of each size and context
LM_SHARE = 0.4  # the LM steps' share of the budget; the kernel grid gets the rest
KERNEL_REPEATS = 3
DESTINATION = REPORTS / "gpu_xlstm.csv"
COLUMNS = (
    "device",
    "part",
    "benchmark",
    "shape",
    "unit",
    "ours",
    "peer_name",
    "peer",
    "ratio",
    "target",
    "met",
    "peak_memory_gib",
    "peer_peak_memory_gib",
    "status",
    "torch",
)
SKIPPED_LINE = re.compile(r"^mLSTM kernel grid, (?P<shape>.*): (?P<backend>\w+) skipped \((?P<why>.*)\)$")


def lm_settings() -> list[StepSetting]:
    return [
        StepSetting(model, size, TOKENS_PER_STEP // context, context)
        for size in SIZES
        for context in CONTEXTS
        for model in MODELS
    ]


def _gib(result: dict) -> float | None:
    return round(result["peak_memory_bytes"] / 2**30, 2) if result.get("peak_memory_bytes") is not None else None


def lm_rows(results: list[tuple[StepSetting, dict]]) -> list[dict]:
    """One row per xLSTM model, size and context, against Llama of that size and context measured in this run."""
    peers = {(setting.size, setting.context): result for setting, result in results if setting.model == MODELS[0]}
    rows = []
    for setting, result in results:
        if setting.model == MODELS[0]:
            continue
        peer = peers[(setting.size, setting.context)]
        both = result["status"] == OK and peer["status"] == OK
        status = result["status"] if peer["status"] == OK else f"{result['status']}; Llama: {peer['status']}"
        comparison = Comparison(
            f"LM training step {setting.model} {setting.size}",
            f"B={setting.batch} S={setting.context} bf16",
            "tokens/s",
            result.get("tokens_per_second", float("nan")),
            f"Llama {setting.size} (same run)",
            peer.get("tokens_per_second", float("nan")),
        )
        row = comparison.as_row() if both else {**asdict(comparison), "ours": None, "peer": None}
        if not both and result["status"] == OK:
            row["ours"] = round(result["tokens_per_second"])
        if not both and peer["status"] == OK:
            row["peer"] = round(peer["tokens_per_second"])
        rows.append(
            row
            | {"part": "LM step", "peak_memory_gib": _gib(result), "peer_peak_memory_gib": _gib(peer), "status": status}
        )
    return rows


def lm_comparisons(rows: list[dict]) -> list[Comparison]:
    return [
        Comparison(row["benchmark"], row["shape"], row["unit"], row["ours"], row["peer_name"], row["peer"])
        for row in rows
        if row["part"] == "LM step" and row["status"] == OK
    ]


def kernel_grid_result(repeats: int) -> dict:
    """In the child: the grid's comparisons and the lines of the backends it skipped (it prints them to stderr)."""
    from benchmarks.gpu_kernels import mlstm_kernel_grid

    skipped = io.StringIO()
    with contextlib.redirect_stderr(skipped):
        comparisons = mlstm_kernel_grid(repeats)
    return {
        "status": OK,
        "comparisons": [asdict(comparison) for comparison in comparisons],
        "skipped": skipped.getvalue().splitlines(),
    }


def kernel_rows(result: dict) -> tuple[list[dict], list[Comparison]]:
    """The grid's rows (and comparisons), a row per skipped backend, or one row saying why the grid has none."""
    if result["status"] != OK:
        return [{"part": "mLSTM kernel", "benchmark": "mLSTM kernel grid", "status": result["status"]}], []
    comparisons = [Comparison(**fields) for fields in result["comparisons"]]
    rows = [comparison.as_row() | {"part": "mLSTM kernel", "status": OK} for comparison in comparisons]
    for line in result["skipped"]:
        skipped = SKIPPED_LINE.match(line)
        if skipped is None:
            rows.append({"part": "mLSTM kernel", "benchmark": "mLSTM kernel grid", "status": line})
        else:
            rows.append(
                {
                    "part": "mLSTM kernel",
                    "benchmark": "mLSTM chunkwise",
                    "shape": skipped["shape"],
                    "peer_name": skipped["backend"],
                    "status": f"skipped: {skipped['why']}",
                }
            )
    return rows, comparisons


def write_rows(rows: list[dict], device: Device, destination: Path) -> None:
    """``rows`` with the device's name after the rows of the other devices already in ``destination``."""
    table = pd.DataFrame(
        [
            {column: (row | {"device": device.name, "torch": device.torch_version}).get(column) for column in COLUMNS}
            for row in rows
        ],
        columns=list(COLUMNS),
    )
    if destination.exists():
        existing = pd.read_csv(destination, dtype=str, keep_default_na=False)
        table = pd.concat(
            [existing[existing["device"] != device.name], table.astype(object).where(table.notna(), "")],
            ignore_index=True,
        )
    write_text_atomic(destination, table.to_csv(index=False))


def xlstm_comparisons(
    budget_seconds: float,
    destination: Path = DESTINATION,
    measure: Callable[[StepSetting, float], dict] = measure_in_child,
    grid: Callable[[float], dict] | None = None,
    device: Device | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> list[Comparison]:
    """Section ``gpu_xlstm`` of benchmarks.run: the LM steps, then the kernel grid; ``destination`` after each.
    ``measure``, ``grid`` (seconds -> the grid child's result) and ``device`` default to the real ones on CUDA."""
    if device is None:
        if not torch.cuda.is_available():
            raise RuntimeError("benchmarks.gpu_xlstm needs a CUDA device (torch.cuda.is_available() is False)")
        name = torch.cuda.get_device_name()
        device = Device(name, device_peak_tflops(name), torch.__version__)
    grid = grid or (
        lambda seconds: run_child(["-m", "benchmarks.gpu_xlstm", "--kernel-grid", str(KERNEL_REPEATS)], seconds)
    )
    started = clock()
    rows = lm_rows(
        measure_within_budget(
            lm_settings(),
            LM_SHARE * budget_seconds,
            measure,
            clock,
            progress=lambda results: write_rows(lm_rows(results), device, destination),
        )
    )
    write_rows(rows, device, destination)
    left = budget_seconds - (clock() - started)
    grid_result = (
        grid(left) if left >= MIN_CHILD_SECONDS else {"status": f"not run: the {budget_seconds:.0f} s budget was spent"}
    )
    grid_rows, grid_comparisons = kernel_rows(grid_result)
    write_rows(rows + grid_rows, device, destination)
    print(f"  wrote {destination}")
    return lm_comparisons(rows) + grid_comparisons


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--kernel-grid",
        type=int,
        metavar="REPEATS",
        required=True,
        help="run the mLSTM kernel grid here and print its result as JSON (the section's child)",
    )
    print(json.dumps(kernel_grid_result(parser.parse_args(argv).kernel_grid)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
