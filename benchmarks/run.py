"""Our xLSTM kernels and models against the official package, a same-size Llama and the machine, in one run.

    python -m benchmarks.run [--quick] [--repeats N] [--only SECTION ...]
    python -m benchmarks.run --only gpu gpu_xlstm [--budget-seconds N] [--models ...]   (on a CUDA device)

Every row times ours and its peer interleaved (medians of --repeats rounds, after a warm-up round) and prints
the ratio (> 1: ours better; time and memory: peer / ours, rates: ours / peer) and, where the issue sets one,
the target ratio and whether it is met. Results also go to results/reports/benchmarks.csv, one row per comparison
with its section: a run of some sections (--only) replaces only their rows. Section ``cli`` times the everyday
commands (`list`, `report --help`, every artifact's paper dry run) in fresh processes, cold and warm, against issue
34's budgets (benchmarks.cli_commands); section ``allocator`` a language model's training step with tcmalloc against
glibc's malloc, each in fresh processes (benchmarks.worker_allocator).

The GPU sections run only when named and need a CUDA device: ``gpu`` (every language model's training throughput,
MFU and memory against Llama: benchmarks.gpu_throughput, results/reports/gpu_throughput.csv) and ``gpu_xlstm`` (the
mLSTM kernel grid and the LM step of xLSTM[1:0], xLSTM[7:1] and Llama at 125M and 350M: benchmarks.gpu_xlstm,
results/reports/gpu_xlstm.csv). Each measures in child processes within --budget-seconds.
"""

import argparse
import math
import sys
from pathlib import Path

import pandas as pd
import torch
from rich.console import Console
from rich.table import Table

from benchmarks import (
    cli_commands,
    gpu_throughput,
    gpu_xlstm,
    kernel_benchmarks,
    lm_training,
    model_benchmarks,
    mqar_generation,
    store_reading,
    worker_allocator,
)
from benchmarks.timing import interleaved_medians
from experiments.atomic import write_text_atomic
from experiments.paths import REPORTS

SECTIONS = (
    "mlstm",
    "memory",
    "slstm",
    "mamba",
    "linear",
    "training",
    "generation",
    "mqar",
    "lm",
    "store",
    "cli",
    "allocator",
)
GPU_SECTIONS = ("gpu", "gpu_xlstm")  # run only when named (--only), on a CUDA device
GPU_BUDGET_SECONDS = {"gpu": 600.0, "gpu_xlstm": 600.0}  # each section's default time budget


def matmul_peak_gflops(size: int = 2048, repeats: int = 5) -> float:
    a, b = torch.randn(size, size), torch.randn(size, size)
    seconds = interleaved_medians({"matmul": lambda: a @ b}, repeats)["matmul"]
    return 2 * size**3 / seconds / 1e9


def comparisons(
    section: str,
    quick: bool,
    repeats: int,
    matmul_peak: float,
    budget_seconds: float | None = None,
    models: list[str] | None = None,
):
    if section == "gpu":
        return gpu_throughput.gpu_comparisons(budget_seconds or GPU_BUDGET_SECONDS[section], models)
    if section == "gpu_xlstm":
        return gpu_xlstm.xlstm_comparisons(budget_seconds or GPU_BUDGET_SECONDS[section])
    if section == "mlstm":
        return kernel_benchmarks.mlstm_comparisons([256] if quick else [256, 1024, 4096], repeats, matmul_peak)
    if section == "memory":
        lengths = (256, 1024) if quick else (1024, 4096, 16384)
        return kernel_benchmarks.memory_comparisons(
            1024 if quick else 4096
        ) + kernel_benchmarks.memory_scaling_comparisons(lengths)
    if section == "slstm":
        return kernel_benchmarks.slstm_comparisons(repeats)
    if section == "mamba":
        return kernel_benchmarks.selective_scan_comparisons(repeats)
    if section == "linear":
        return kernel_benchmarks.linear_attention_comparisons(repeats)
    if section == "training":
        return model_benchmarks.training_comparisons(repeats)
    if section == "lm":
        return lm_training.comparisons(512 if quick else 2048, repeats)
    if section == "mqar":
        return mqar_generation.comparisons(10_000 if quick else 100_000, repeats)
    if section == "store":
        return store_reading.comparisons(10 if quick else 100, repeats)
    if section == "cli":
        return cli_commands.comparisons(min(repeats, 3))
    if section == "allocator":
        return worker_allocator.comparisons(turns=1 if quick else 2)
    return model_benchmarks.generation_comparisons(128 if quick else 1024, repeats)


def with_other_sections(table: pd.DataFrame, destination: Path) -> pd.DataFrame:
    """``table`` (the sections just run) with the rows of every other section already in ``destination``, in
    SECTIONS order (then GPU_SECTIONS'): a run of some sections never drops the results of the others."""
    if not destination.exists():
        return table
    existing = pd.read_csv(destination, dtype=str, keep_default_na=False)
    if "section" not in existing.columns:
        raise SystemExit(
            f"{destination} has no section column (written before sections were recorded): move it "
            "aside or run every section"
        )
    kept = existing[~existing["section"].isin(table["section"])]
    merged = pd.concat([kept, table.astype(object).where(table.notna(), "")], ignore_index=True)
    order = merged["section"].map({name: index for index, name in enumerate(SECTIONS + GPU_SECTIONS)})
    return merged.iloc[order.argsort(kind="stable")]


def show(table: pd.DataFrame, console: Console) -> None:
    view = Table(title="ours vs peers (xlstm==2.0.6, mlstm_kernels==2.0.6, transformers; medians, interleaved)")
    for column in table.columns:
        view.add_column(column, justify="left" if column in ("benchmark", "shape", "peer_name", "unit") else "right")
    for row in table.itertuples(index=False):
        view.add_row(*("" if isinstance(v, float) and math.isnan(v) else str(v) for v in row))
    console.print(view)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="short sequences, few tokens, 3 repeats (a smoke run)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--only",
        nargs="+",
        choices=SECTIONS + GPU_SECTIONS,
        default=list(SECTIONS),
        metavar="SECTION",
        help=f"sections to run, from {list(SECTIONS)} (default: all of them) and, on a CUDA device, "
        f"{list(GPU_SECTIONS)}",
    )
    parser.add_argument(
        "--budget-seconds",
        type=float,
        help="the time budget of each GPU section (default: "
        f"{GPU_BUDGET_SECONDS}); what it does not reach is a row saying so",
    )
    parser.add_argument("--models", nargs="+", help="section gpu: only these language models (and Llama, the peer)")
    arguments = parser.parse_args(argv)
    gpu_sections = [section for section in arguments.only if section in GPU_SECTIONS]
    if arguments.models and "gpu" not in arguments.only:
        parser.error("--models selects the models of section gpu: add --only gpu")
    if gpu_sections and not torch.cuda.is_available():
        print(
            f"benchmarks.run: sections {gpu_sections} need a CUDA device and torch sees none "
            "(torch.cuda.is_available() is False)",
            file=sys.stderr,
        )
        return 2
    repeats = 3 if arguments.quick else arguments.repeats
    console = Console(width=200)
    if len(gpu_sections) < len(arguments.only):
        peak = matmul_peak_gflops()
        console.print(
            f"torch {torch.__version__}, {torch.get_num_threads()} threads, matmul peak {peak:.0f} GFLOP/s "
            f"(float32, 2048^2)"
        )
    else:
        peak = math.nan  # only the GPU sections, which compare against peers measured on the GPU
        console.print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    rows = []
    for section in arguments.only:
        console.print(f"[bold]{section}[/bold] ...")
        rows += [
            {"section": section} | row.as_row()
            for row in comparisons(section, arguments.quick, repeats, peak, arguments.budget_seconds, arguments.models)
        ]
    if not rows:
        console.print("no comparisons to record (every row above says why)")
        return 0
    table = pd.DataFrame(rows)
    show(table, console)
    missed = table[table["met"] == "NO"]
    console.print(
        f"targets met: {(table['met'] == 'yes').sum()} of {(table['met'] != '').sum()}"
        + (f"; missed: {', '.join(missed['benchmark'] + ' ' + missed['shape'])}" if len(missed) else "")
    )
    destination = REPORTS / ("benchmarks-quick.csv" if arguments.quick else "benchmarks.csv")
    write_text_atomic(destination, with_other_sections(table, destination).to_csv(index=False))
    console.print(f"wrote {destination}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
