"""The GPU benchmarks' logic on the CPU (benchmarks.gpu_training_step, gpu_children, gpu_throughput, gpu_xlstm and
their sections in benchmarks.run): the timed step on tiny models, the fallback to smaller micro-batches, the child
processes' failures, the time budget, the rows (MFU, ratios, memory), the CSVs; timings are fakes, the arithmetic
on them is checked. The measurements themselves run on a lent GPU (benchmarks/gpu_session.sh)."""

import math
import re
import subprocess
import time

import pandas as pd
import pytest
import torch

from benchmarks import gpu_throughput, gpu_xlstm, run
from benchmarks.gpu_children import run_child
from benchmarks.gpu_throughput import Device, StepSetting
from benchmarks.gpu_training_step import measure, micro_batches, timed_steps
from models.flops import flops_per_token
from models.registry import build_language_model_from, known_language_models
from tests.processes import running
from tests.repository_copy import REPOSITORY_ROOT

VOCAB = 64
H200 = Device("NVIDIA H200", 989.0, "2.11.0")


def tiny_language_model(name: str, size: str) -> torch.nn.Module:
    return build_language_model_from(name, VOCAB, embedding_dim=16, num_blocks=1)


class OutOfMemoryAbove(torch.nn.Module):
    """A tiny language model that fails as CUDA does when a micro-batch holds more than ``limit`` sequences."""

    def __init__(self, limit: int):
        super().__init__()
        self.limit, self.model = limit, tiny_language_model("llama", "125m")

    def forward(self, tokens):
        if tokens.shape[0] > self.limit:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 3.00 GiB")
        return self.model(tokens)


@pytest.mark.parametrize(
    "name, precision", [("llama", "bf16 autocast, float32 weights"), ("hgrn", "bf16 weights (FSDP's parameter dtype)")]
)
def test_a_step_is_timed_in_the_recipes_precision(name, precision):
    setting = StepSetting(name, "125m", batch=4, context=16, warmup=1, steps=2)
    result = measure(setting, torch.device("cpu"), tiny_language_model, vocab_size=VOCAB)
    assert result["status"] == "ok" and result["micro_batch"] == 4 and result["precision"] == precision
    assert result["tokens_per_second"] == pytest.approx(4 * 16 / result["step_seconds"])
    assert math.isfinite(result["loss"]) and result["loss"] == pytest.approx(math.log(VOCAB), rel=0.2)
    assert result["peak_memory_bytes"] is None  # measured on CUDA only


def test_a_batch_that_does_not_fit_runs_as_micro_batches_with_accumulation_or_is_reported():
    setting = StepSetting("llama", "125m", batch=8, context=16, warmup=1, steps=1)
    result = measure(setting, torch.device("cpu"), lambda name, size: OutOfMemoryAbove(2), vocab_size=VOCAB)
    assert result["status"] == "ok" and result["micro_batch"] == 2
    assert result["tokens_per_second"] == pytest.approx(8 * 16 / result["step_seconds"])  # every token of the step
    result = measure(setting, torch.device("cpu"), lambda name, size: OutOfMemoryAbove(0), vocab_size=VOCAB)
    assert result == {"status": "out of memory at micro-batch 1", "precision": "bf16 autocast, float32 weights"}
    assert micro_batches(16) == [16, 8, 4, 2, 1] and micro_batches(12) == [12, 6, 3]


def test_the_timed_steps_are_the_median_after_the_warm_up():
    ticks = iter([0.0, 1.0, 10.0, 13.0, 20.0, 22.0])  # three timed steps of 1, 3 and 2 s
    calls = []
    timing = timed_steps(
        lambda: calls.append(1) or 0.5,
        StepSetting("llama", "125m", 1, 1, warmup=2, steps=3),
        torch.device("cpu"),
        clock=lambda: next(ticks),
    )
    assert len(calls) == 5 and timing == {"step_seconds": 2.0, "peak_memory_bytes": None, "loss": 0.5}


def test_a_child_gives_its_json_or_says_why_not_and_a_hung_one_is_killed_with_its_children(tmp_path):
    assert run_child(["-c", 'print(\'log line\'); print(\'{"status": "ok", "rate": 2.5}\')'], 30) == {
        "status": "ok",
        "rate": 2.5,
    }
    assert run_child(["-c", "import os; os.abort()"], 30)["status"].startswith("killed by SIGABRT")
    assert run_child(["-c", "import sys; sys.exit('compile failed: unsupported layout')"], 30) == {
        "status": "exit code 1: compile failed: unsupported layout"
    }
    grandchild_pid = tmp_path / "grandchild"
    hang = (
        f"import subprocess, sys, time; child = subprocess.Popen([sys.executable, '-c', 'import time; "
        f"time.sleep(600)']); open({str(grandchild_pid)!r}, 'w').write(str(child.pid)); time.sleep(600)"
    )
    assert run_child(["-c", hang], 3) == {"status": "timed out after 3 s"}
    assert ends_within(int(grandchild_pid.read_text()), seconds=10)  # no orphan keeps the GPU busy


def ends_within(pid: int, seconds: float) -> bool:
    """Whether process ``pid`` ends within ``seconds`` (a SIGKILL is delivered at once; the process then takes its
    moment to exit, longer on a busy machine)."""
    deadline = time.monotonic() + seconds
    while running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not running(pid)


def test_llama_runs_first_then_every_language_model_at_its_smallest_preset():
    plan = gpu_throughput.settings()
    assert [setting.model for setting in plan][0] == "llama"
    assert sorted(setting.model for setting in plan) == sorted(known_language_models())
    sizes = {setting.model: setting.size for setting in plan}
    assert sizes["xlstm_7_1"] == "125m" and sizes["lstm"] == "350m" and sizes["gla"] == "350m"
    assert {(setting.batch, setting.context) for setting in plan} == {(16, 2048)}
    assert [setting.model for setting in gpu_throughput.settings(["mamba"])] == ["llama", "mamba"]
    with pytest.raises(ValueError, match=r"unknown language models \['mamba2'\]; valid choices: \['xlstm_1_0'"):
        gpu_throughput.settings(["mamba2"])


def fake_measure(rates: dict[str, float], seconds_each: float, clock: list[float], asked: list):
    """A measurement that takes ``seconds_each`` of the fake ``clock`` and returns ``rates[model]`` tokens/s (a
    model without one crashed)."""

    def measure_setting(setting, timeout):
        asked.append((setting.model, timeout))
        clock[0] += seconds_each
        if setting.model not in rates:
            return {"status": "killed by SIGABRT: LLVM ERROR"}
        return {
            "status": "ok",
            "micro_batch": setting.batch,
            "precision": "bf16 autocast, float32 weights",
            "tokens_per_second": rates[setting.model],
            "step_seconds": setting.batch * setting.context / rates[setting.model],
            "peak_memory_bytes": 3 * 2**30,
            "loss": 10.8,
        }

    return measure_setting


def test_the_budget_limits_each_child_and_the_models_it_does_not_reach_say_so():
    clock, asked = [0.0], []
    plan = gpu_throughput.settings(["xlstm_1_0", "mamba", "rwkv4"])
    results = gpu_throughput.measure_within_budget(
        plan, 100.0, fake_measure({"llama": 1.0}, 45.0, clock, asked), clock=lambda: clock[0], per_model_seconds=60.0
    )
    assert asked == [("llama", 60.0), ("xlstm_1_0", 55.0)]  # then 10 s were left, below a child's minimum
    not_run = "not run: the 100 s budget was spent"
    assert [result["status"] for _, result in results] == ["ok", "killed by SIGABRT: LLVM ERROR", not_run, not_run]


def test_rows_hold_the_rate_mfu_memory_and_ratio_to_llama_of_the_same_run():
    clock, asked = [0.0], []
    plan = gpu_throughput.settings(["xlstm_1_0", "mamba"])
    rates = {"llama": 277_000.0, "xlstm_1_0": 58_700.0}
    results = gpu_throughput.measure_within_budget(
        plan, 1e4, fake_measure(rates, 1.0, clock, asked), clock=lambda: clock[0]
    )
    rows = {row["model"]: row for row in gpu_throughput.throughput_rows(results, H200)}
    xlstm = rows["xlstm_1_0"]
    flops = flops_per_token("xlstm_1_0", 768, 24, sequence_length=2048, output_size=50304).training
    assert xlstm["training_flops_per_token"] == round(flops)
    assert xlstm["mfu"] == round(flops * 58_700 / 989e12, 4) and 0 < xlstm["mfu"] < 1
    assert xlstm["ratio_to_llama"] == round(58_700 / 277_000, 3) and rows["llama"]["ratio_to_llama"] == 1.0
    assert xlstm["peak_memory_gib"] == 3.0 and xlstm["step_ms"] == round(16 * 2048 / 58_700 * 1e3, 1)
    assert (xlstm["device"], xlstm["size"], xlstm["batch"], xlstm["context"]) == ("NVIDIA H200", "125m", 16, 2048)
    assert rows["mamba"]["status"] == "killed by SIGABRT: LLVM ERROR" and rows["mamba"]["tokens_per_s"] is None
    (comparison,) = gpu_throughput.comparisons(list(rows.values()))  # llama is the peer, mamba has no rate
    assert (comparison.benchmark, comparison.peer_name) == ("GPU training step xlstm_1_0 125m", "Llama 125m (same run)")
    assert comparison.ratio == pytest.approx(58_700 / 277_000)

    unlisted = gpu_throughput.throughput_rows(results, Device("Tesla T4", None, "2.11.0"))
    assert all(row["mfu"] is None for row in unlisted) and unlisted[1]["tokens_per_s"] == 58_700
    without_llama = [(setting, result) for setting, result in results if setting.model != "llama"]
    assert gpu_throughput.throughput_rows(without_llama, H200)[0]["ratio_to_llama"] is None


def test_a_run_replaces_its_devices_rows_and_keeps_the_other_devices(tmp_path):
    destination = tmp_path / "gpu_throughput.csv"
    setting = StepSetting("llama", "125m", 16, 2048)
    for device, rate in (
        (H200, 277_000.0),
        (Device("NVIDIA H100 80GB HBM3", 989.0, "2.11.0"), 200_000.0),
        (H200, 280_000.0),
    ):
        result = {
            "status": "ok",
            "micro_batch": 16,
            "precision": "p",
            "tokens_per_second": rate,
            "step_seconds": 0.1,
            "peak_memory_bytes": 2**30,
        }
        rows = gpu_throughput.throughput_rows([(setting, result)], device)
        destination.write_text(gpu_throughput.with_other_devices(rows, destination).to_csv(index=False))
    table = pd.read_csv(destination)
    assert list(table["device"]) == ["NVIDIA H100 80GB HBM3", "NVIDIA H200"]
    assert list(table["tokens_per_s"]) == [200_000, 280_000]
    assert list(table.columns) == list(gpu_throughput.COLUMNS)


@pytest.mark.parametrize(
    "name, peak",
    [
        ("NVIDIA H200", 989.0),
        ("NVIDIA H100 80GB HBM3", 989.0),
        ("NVIDIA H100 PCIe", 756.0),
        ("NVIDIA A100-SXM4-80GB", 312.0),
        ("NVIDIA H100 NVL", None),
        ("Tesla T4", None),
    ],
)
def test_the_peak_is_the_devices_dense_bf16_peak(name, peak):
    assert gpu_throughput.device_peak_tflops(name) == peak


def test_the_xlstm_section_compares_each_size_and_context_with_llama_and_keeps_its_rows_if_the_grid_fails(tmp_path):
    clock, asked = [0.0], []
    rates = {"llama": 200_000.0, "xlstm_1_0": 50_000.0}  # xlstm_7_1 crashes
    destination = tmp_path / "gpu_xlstm.csv"
    skipped = (
        "mLSTM kernel grid, B=16 NH=4 S=2048 DH=128: tfla skipped (killed by SIGABRT; with DISABLE_LLVM_OPT=1: ok)"
    )
    grid_rows = [
        {
            "benchmark": "mLSTM chunkwise fwd, bf16",
            "shape": "B=16 NH=4 S=2048 DH=128",
            "unit": "ms",
            "ours": 2.0,
            "peer_name": "SDPA (causal)",
            "peer": 1.0,
            "target": None,
        }
    ]

    def grid(seconds):
        asked.append(("grid", seconds))
        return {"status": "ok", "comparisons": grid_rows, "skipped": [skipped]}

    comparisons = gpu_xlstm.xlstm_comparisons(
        1000.0, destination, fake_measure(rates, 10.0, clock, asked), grid, H200, clock=lambda: clock[0]
    )
    assert [model for model, _ in asked[:3]] == ["llama", "xlstm_1_0", "xlstm_7_1"]
    assert asked[-1] == ("grid", 1000.0 - 12 * 10.0)  # the LM steps took 12 x 10 s of the budget
    table = pd.read_csv(destination)
    lm = table[table["part"] == "LM step"]
    assert list(lm["shape"]) == ["B=16 S=2048 bf16", "B=16 S=2048 bf16", "B=4 S=8192 bf16", "B=4 S=8192 bf16"] * 2
    xlstm = lm[lm["benchmark"] == "LM training step xlstm_1_0 350m"].iloc[0]
    assert (xlstm["ratio"], xlstm["peer_name"], xlstm["peak_memory_gib"]) == (0.25, "Llama 350m (same run)", 3.0)
    crashed = lm[lm["benchmark"] == "LM training step xlstm_7_1 125m"].iloc[0]
    assert crashed["status"] == "killed by SIGABRT: LLVM ERROR" and math.isnan(crashed["ours"])
    assert crashed["peer"] == 200_000
    kernels = table[table["part"] == "mLSTM kernel"]
    assert list(kernels["status"]) == ["ok", "skipped: killed by SIGABRT; with DISABLE_LLVM_OPT=1: ok"]
    assert kernels.iloc[0]["ratio"] == 0.5 and kernels.iloc[1]["peer_name"] == "tfla"
    assert set(table["device"]) == {"NVIDIA H200"}
    assert len(comparisons) == 4 + 1  # xlstm_1_0 at 2 sizes x 2 contexts, and the grid's row

    def failing_grid(seconds):
        raise RuntimeError("the grid's child could not start")

    clock[0] = 0.0
    with pytest.raises(RuntimeError, match="could not start"):
        gpu_xlstm.xlstm_comparisons(
            1000.0, destination, fake_measure(rates, 10.0, clock, []), failing_grid, H200, clock=lambda: clock[0]
        )
    assert (pd.read_csv(destination)["part"] == "LM step").all()  # written before the grid ran


def test_the_xlstm_sections_grid_says_why_it_did_not_run():
    rows, comparisons = gpu_xlstm.kernel_rows({"status": "timed out after 300 s"})
    assert rows == [{"part": "mLSTM kernel", "benchmark": "mLSTM kernel grid", "status": "timed out after 300 s"}]
    assert comparisons == []


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message given without a CUDA device")
def test_the_gpu_sections_without_cuda_exit_with_one_line(capsys):
    for sections in (["gpu"], ["gpu_xlstm"], ["mlstm", "gpu"]):
        assert run.main(["--only", *sections]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        (line,) = captured.err.splitlines()
        assert "need a CUDA device" in line and str([s for s in sections if s.startswith("gpu")]) in line
    assert "gpu" not in run.SECTIONS  # `make bench` (every section by default) stays on the CPU


def test_the_gpu_session_runs_every_test_file_that_holds_gpu_tests_with_tests_gpu_first():
    """benchmarks/gpu_session.sh passes pytest the files that hold tests marked gpu; a file it missed would never run
    on a lent GPU (its CUDA kernel tests, e.g. tests/kernels/test_mlstm_triton.py, did not, once the tests moved into
    folders)."""
    script = REPOSITORY_ROOT / "benchmarks" / "gpu_session.sh"
    listed = subprocess.run(
        ["bash", "-c", f'eval "$(sed -n "/^gpu_test_files()/,/^}}/p" {script})" && gpu_test_files'],
        cwd=REPOSITORY_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    holding = sorted(
        str(path.relative_to(REPOSITORY_ROOT))
        for path in (REPOSITORY_ROOT / "tests").rglob("test_*.py")
        if re.search(r"pytest\.mark\.gpu\b", path.read_text())
    )
    assert sorted(listed) == holding and len(listed) == len(set(listed))
    assert "tests/kernels/test_mlstm_triton.py" in listed
    first_elsewhere = next(index for index, path in enumerate(listed) if not path.startswith("tests/gpu/"))
    assert all(path.startswith("tests/gpu/") for path in listed[:first_elsewhere])
    assert not any(path.startswith("tests/gpu/") for path in listed[first_elsewhere:])
