"""The dry run's GPU-hours at the model FLOP utilisation measured on a GPU (results/reports/gpu_throughput.csv,
benchmarks.gpu_throughput) where the run's model has one, the flat assumption elsewhere: the accelerator the command
line and the measured file give, and the estimate it prints (fake measurement files)."""

import re

import pytest

from experiments.sweeps import compute_estimate
from experiments.sweeps.compute_estimate import (
    Accelerator,
    RunCompute,
    command_line_accelerator,
    estimate_text,
    measured_rates,
)
from experiments.sweeps.sweep import main as sweep_main
from tests.sweep_fakes import small_artifact

HEADER = (
    "device,model,size,batch,context,micro_batch,precision,tokens_per_s,step_ms,training_flops_per_token,"
    "peak_tflops,mfu,peak_memory_gib,ratio_to_llama,status,torch\n"
)
H200_ROWS = (
    "NVIDIA H200,llama,125m,16,2048,16,p,277000,118.3,1e9,989.0,0.45,37.0,1.0,ok,2.11\n"
    "NVIDIA H200,xlstm_1_0,125m,16,2048,16,p,58700,558.2,1e9,989.0,0.31,65.0,0.212,ok,2.11\n"
    "NVIDIA H200,mamba,125m,16,2048,,,,,1e9,989.0,,,,timed out after 240 s,2.11\n"
)
H100_ROW = "NVIDIA H100 80GB HBM3,llama,125m,16,2048,16,p,200000,164,1e9,989.0,0.33,37.0,1.0,ok,2.11\n"


@pytest.fixture
def measured(tmp_path):
    path = tmp_path / "gpu_throughput.csv"
    path.write_text(HEADER + H200_ROWS)
    return path


def test_the_measured_rates_are_the_rows_that_measured_a_model(measured):
    ((device, rates),) = measured_rates(measured).items()
    assert device == "NVIDIA H200" and [(rate.model, rate.utilization) for rate in rates] == [
        ("llama", 0.45),
        ("xlstm_1_0", 0.31),
    ]
    assert measured_rates(measured.parent / "missing.csv") == {}
    measured.write_text("device,model\nNVIDIA H200,llama\n")
    with pytest.raises(ValueError, match=r"lacks the columns \['status', 'mfu', 'peak_tflops'\]"):
        measured_rates(measured)


def test_a_measured_model_runs_at_its_measured_rate_and_the_others_at_the_stated_utilisation(measured):
    accelerator = command_line_accelerator(None, None, None, measured)  # the one device measured
    assert (accelerator.name, accelerator.peak_tflops, accelerator.utilization) == ("NVIDIA H200", 989.0, 0.4)
    flops = 1e21
    assert accelerator.gpu_hours(flops, "xlstm_1_0") == pytest.approx(flops / (989e12 * 0.31) / 3600)
    assert accelerator.gpu_hours(flops, "mamba") == pytest.approx(flops / (989e12 * 0.4) / 3600)  # it timed out
    assert accelerator.gpu_hours(flops) == pytest.approx(flops / (989e12 * 0.4) / 3600)
    faster = command_line_accelerator("h200", 1000.0, 0.5, measured)  # a part of the name, any case
    assert faster.gpu_hours(flops, "xlstm_1_0") == accelerator.gpu_hours(flops, "xlstm_1_0")  # as measured
    assert faster.gpu_hours(flops, "mamba") == pytest.approx(flops / (1000e12 * 0.5) / 3600)


def test_without_a_measurement_for_the_named_gpu_the_estimate_is_the_stated_one(measured):
    for accelerator in (
        command_line_accelerator("A100", None, None, measured),
        command_line_accelerator(None, None, None, measured.parent / "missing.csv"),
    ):
        assert accelerator.measured == () and accelerator.peak_tflops == 312.0 and accelerator.utilization == 0.4
    assert command_line_accelerator("A100", None, None, measured).name == "A100"
    assert command_line_accelerator(None, 989.0, 0.5, measured.parent / "missing.csv") == Accelerator(
        "A100 bf16", 989.0, 0.5
    )
    measured.write_text(HEADER + H200_ROWS + H100_ROW)
    assert command_line_accelerator(None, None, None, measured).measured == ()  # two devices, neither named
    assert command_line_accelerator("H100", None, None, measured).measured[0].utilization == 0.33
    measured.write_text(HEADER + H100_ROW + H100_ROW.replace("80GB HBM3", "PCIe"))
    with pytest.raises(
        ValueError,
        match=r"--gpu-name 'H100' matches several devices measured in .*: \['NVIDIA H100 "
        r"80GB HBM3', 'NVIDIA H100 PCIe'\]; name one of them",
    ):
        command_line_accelerator("H100", None, None, measured)


def test_the_estimate_sums_each_runs_hours_and_says_which_utilisation_each_model_took(measured):
    accelerator = command_line_accelerator(None, None, None, measured)
    computes = [
        RunCompute(100, 1e20, model="xlstm_1_0"),
        RunCompute(100, 2e20, model="llama"),
        RunCompute(100, 1e20, model="mamba"),
    ]
    text = estimate_text(computes, accelerator)
    hours = float(re.search(r"GPU-hours: ([0-9.e+]+)", text).group(1))
    expected = (1e20 / 0.31 + 2e20 / 0.45 + 1e20 / 0.4) / 989e12 / 3600
    assert hours == pytest.approx(expected, rel=5e-3)  # three significant digits
    assert (
        f"measured MFU on NVIDIA H200 ({measured}): 45% for llama, 31% for xlstm_1_0; 40% (assumed) for mamba"
        in " ".join(text.split())
    )
    flat = estimate_text(computes, Accelerator())
    assert "on A100 bf16 (312 TFLOP/s) at 40% utilisation = FLOPs / (312e12 FLOP/s x 0.4) / 3600" in flat


def test_the_dry_run_takes_the_measured_file_and_its_rows_show_the_measured_hours(
    measured, tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(compute_estimate, "MEASURED_THROUGHPUT", measured)
    artifact = small_artifact(["llama", "xlstm_1_0"], tasks=["parity"])
    monkeypatch.setattr("experiments.sweeps.sweep.load_artifact", lambda name: artifact)
    monkeypatch.setenv("COLUMNS", "200")  # a run's row on one line
    root = tmp_path / "runs"
    assert sweep_main(["sweep-fixture", "--scale", "smoke", "--dry-run", "--verbose", "--root", str(root)]) == 0
    printed = capsys.readouterr().out
    output = " ".join(printed.split())
    assert "on NVIDIA H200 (989 TFLOP/s) at 40% utilisation where no MFU is measured" in output
    assert "measured MFU on NVIDIA H200" in output and "31% for xlstm_1_0" in output
    for model, utilization in (("xlstm_1_0", 0.31), ("llama", 0.45)):  # each run's row at its model's rate
        row = next(line.split() for line in printed.splitlines() if line.split()[:1] == [model] and "pending" in line)
        flops, hours = float(row[-2]), float(row[-1])
        assert hours == pytest.approx(flops / (989e12 * utilization) / 3600, rel=0.1)  # two significant digits
    assert not root.exists()  # a dry run writes nothing
