"""The GPU suite's own logic on the CPU (tests/gpu/ runs on a lent GPU): its report (tests.gpu_report) from a junit
XML file of pytest's format, its training runs' command lines and the losses it reads from a run, and its kernel
tests' shape classes against the ops' probe cases."""

import math
import subprocess
import sys

import pytest
import torch

import kernels.linear_attention  # noqa: F401  (these four register their ops' probe cases)
import kernels.mlstm  # noqa: F401
import kernels.selective_scan  # noqa: F401
import kernels.slstm  # noqa: F401
from experiments.config.configuration import compose_run_config
from experiments.config.validation import validate_run_config
from experiments.training.distribution import distributed_trainer_arguments
from kernels import backends
from tests import gpu_report
from tests.gpu.test_gpu_kernels import REALISTIC_CLASSES, kernels_under_test
from tests.gpu.training_runs import (
    MAX_STEPS,
    TrainingRun,
    model_configs,
    training_runs,
    validation_losses,
)
from tests.repository_copy import REPOSITORY_ROOT

# pytest 9's junit XML (xunit2) of a GPU run, shortened: the suite's properties, passed, failed, errored, skipped, and
# the nameless case pytest writes for the test under way when a run is interrupted (SIGINT at the time limit)
JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="1"
failures="1" skipped="1" tests="6" time="312.5" timestamp="2026-11-28T10:00:00.000000+00:00" hostname="gpu">
<properties><property name="device" value="NVIDIA H200" /><property name="driver" value="580.82.07" />
<property name="torch" value="2.11.0+cu130" /><property name="triton" value="3.6.0" /></properties>
<testcase classname="tests.gpu.test_gpu_training" name="test_the_model_trains_on_cuda_through_the_train_command[llama-\
bucket_sort-bf16-mixed]" time="50.1"><properties><property name="model" value="llama" /></properties></testcase>
<testcase classname="tests.gpu.test_gpu_training" name="test_the_model_trains_on_cuda_through_the_train_command[hgrn2-\
bucket_sort-bf16-mixed]" time="61.0"><properties><property name="model" value="hgrn2" /></properties>
<failure message="AssertionError: train failed after 61 s (triton.CompilationError: at 31:8): model=hgrn2&#10;second">
trace</failure></testcase>
<testcase classname="tests.gpu.test_gpu_step" name="test_step_equals_forward_on_cuda[hgrn2]" time="3.0"><properties>
<property name="model" value="hgrn2" /></properties></testcase>
<testcase classname="tests.gpu.test_gpu_kernels" name="test_the_backend_matches_the_torch_backend_on_cuda[gla fla-\
bfloat16]" time="0.5"><properties><property name="kernel" value="gla fla" /></properties><skipped type="pytest.skip"
message="kernel backend 'fla' of gla (bfloat16, key_dim 128, value_dim 256, NVIDIA H200) failed its probe">s</skipped>
</testcase>
<testcase classname="tests.gpu.test_gpu_kernels" name="test_the_backend_matches_the_torch_backend_on_cuda[gla fla-\
float32]" time="0.5"><properties><property name="kernel" value="gla fla" /></properties></testcase>
<testcase classname="tests.kernels.test_mlstm_triton" name="test_cuda_strided_inputs_give_the_same_results" time="2.0">
<error message="failed on setup with &quot;CUDA error: out of memory&quot;">e</error></testcase>
<testcase time="0.000" /></testsuite></testsuites>"""


def test_the_report_gives_the_stack_and_each_models_and_backends_results(tmp_path):
    junit = tmp_path / "gpu.xml"
    junit.write_text(JUNIT)
    output = tmp_path / "gpu" / "tests.md"
    assert gpu_report.main([str(junit), "--output", str(output)]) == 0
    page = output.read_text()
    assert "Run: 2026-11-28T10:00:00.000000+00:00, 312 s; 6 tests: 3 passed, 2 failed, 1 skipped" in page
    for line in ("- device: NVIDIA H200", "- driver: 580.82.07", "- torch: 2.11.0+cu130", "- triton: 3.6.0"):
        assert line in page.splitlines()
    rows = {line.split(" | ")[0].lstrip("| "): line for line in page.splitlines() if line.startswith("| ")}
    assert rows["llama"].startswith("| llama | 1 | 0 | 0 |")
    assert rows["hgrn2"].startswith(
        "| hgrn2 | 1 | 1 | 0 | `test_the_model_trains_on_cuda_through_the_train_command["
        "hgrn2-bucket_sort-bf16-mixed]`: AssertionError: train failed after 61 s "
        "(triton.CompilationError: at 31:8): model=hgrn2 |"
    )
    assert rows["gla fla"].startswith(
        "| gla fla | 1 | 0 | 1 | `test_the_backend_matches_the_torch_backend_on_cuda[gla "
        "fla-bfloat16]`: kernel backend 'fla' of gla (bfloat16"
    )
    assert rows["tests/kernels/test_mlstm_triton.py"].startswith(
        "| tests/kernels/test_mlstm_triton.py | 0 | 1 | 0 | "
        "`test_cuda_strided_inputs_give_the_same_results`: failed on "
        'setup with "CUDA error: out of memory"'
    )
    assert page.index("## Per model") < page.index("## Per kernel backend") < page.index("## Other GPU tests")


def test_the_two_runs_of_a_session_side_by_side_make_one_report(tmp_path):
    """benchmarks/gpu_session.sh runs tests/gpu and the kernels' CUDA tests as two pytest processes at once: one
    page of both, the stack from the run that recorded it, the longer run's time."""
    suite, kernels = tmp_path / "gpu-tests.xml", tmp_path / "gpu-kernel-tests.xml"
    suite.write_text(JUNIT)
    kernels.write_text(
        '<testsuites><testsuite name="pytest" time="400.0" timestamp="2026-11-28T10:00:01.000000+00:00">'
        '<testcase classname="tests.kernels.test_mlstm_triton" name="test_cuda_matches_torch[128-bfloat16]" '
        'time="9.0" /><testcase classname="tests.kernels.test_slstm_triton" name="test_cuda_matches_torch" '
        'time="3.0"><failure message="AssertionError: h differs" /></testcase></testsuite></testsuites>'
    )
    output = tmp_path / "tests.md"
    assert gpu_report.main([str(suite), str(kernels), "--output", str(output)]) == 0
    page = output.read_text()
    assert "Run: 2026-11-28T10:00:00.000000+00:00, 400 s; 8 tests: 4 passed, 3 failed, 1 skipped" in page
    assert "- device: NVIDIA H200" in page.splitlines()
    rows = {line.split(" | ")[0].lstrip("| "): line for line in page.splitlines() if line.startswith("| ")}
    assert rows["tests/kernels/test_mlstm_triton.py"].startswith("| tests/kernels/test_mlstm_triton.py | 1 | 1 | 0 |")
    assert rows["tests/kernels/test_slstm_triton.py"].startswith("| tests/kernels/test_slstm_triton.py | 0 | 1 | 0 |")


def test_a_run_that_skipped_every_test_leaves_the_report_as_it_is(tmp_path, capsys):
    junit, output = tmp_path / "gpu.xml", tmp_path / "tests.md"
    junit.write_text(
        '<testsuites><testsuite name="pytest" time="1.0"><testcase classname="tests.gpu.test_gpu_step" '
        'name="test_step_equals_forward_on_cuda[gla]" time="0.0"><skipped message="needs a CUDA device" />'
        "</testcase></testsuite></testsuites>"
    )
    output.write_text("the report of the last GPU run")
    assert gpu_report.main([str(junit), "--output", str(output)]) == 1
    assert "every GPU test was skipped" in capsys.readouterr().out
    assert output.read_text() == "the report of the last GPU run"


def test_the_report_names_a_missing_file_and_a_file_that_is_not_junit(tmp_path, capsys):
    with pytest.raises(SystemExit):
        gpu_report.main([str(tmp_path / "missing.xml")])
    assert "missing.xml is not a file: run pytest -m gpu --junitxml=" in capsys.readouterr().err
    other = tmp_path / "other.xml"
    other.write_text("<report><item /></report>")
    with pytest.raises(ValueError, match="holds no <testsuite>: not a junit XML file of pytest"):
        gpu_report.read_junit(other)


def test_the_environment_names_the_stack_and_the_commit(monkeypatch):
    monkeypatch.setenv(gpu_report.COMMIT_VARIABLE, "0123abc")
    stack = gpu_report.environment(REPOSITORY_ROOT)
    assert stack["torch"] == torch.__version__ and stack["commit"] == "0123abc"
    assert {"device", "driver", "cuda", "triton", "python", "package mlstm_kernels"} <= set(stack)


def test_every_model_config_trains_at_bf16_and_the_subset_at_float32_with_the_recipes_placement():
    runs = training_runs()
    assert [run.model for run in runs if run.precision == "bf16-mixed"] == model_configs()
    float32 = [run.model for run in runs if run.precision == "32-true"]
    assert (
        len(model_configs()) == 20 and len(float32) == len(set(float32)) == 8 and set(float32) <= set(model_configs())
    )
    assert {(run.task, run.precision) for run in runs} == {
        ("bucket_sort", "bf16-mixed"),
        ("mqar", "32-true"),
        ("lm_sample", "32-true"),
    }
    fsdp = {run.model for run in runs if "trainer.strategy=fsdp" in run.overrides()}
    assert fsdp == {"hgrn", "gla", "hgrn2", "rwkv5", "rwkv6"}  # the paper's models without autocast, at bf16 only
    assert "trainer.accelerator=gpu" in TrainingRun("llama", "mqar", "32-true").overrides()


def test_a_bf16_run_of_a_model_without_autocast_is_a_valid_run_config_with_fsdps_bf16_parameters():
    config = compose_run_config(TrainingRun("hgrn2", "bucket_sort", "bf16-mixed").overrides())
    validate_run_config(config)
    placement = distributed_trainer_arguments(config)
    assert placement["precision"] == "32-true"  # no autocast: FSDP casts the float32 weights to bfloat16
    assert placement["strategy"].mixed_precision.param_dtype == torch.bfloat16


@pytest.mark.slow
@pytest.mark.parametrize("run", training_runs(), ids=lambda run: run.name)
def test_every_training_runs_command_is_a_valid_run_config(run):
    config = compose_run_config(run.overrides())
    validate_run_config(config)
    distributed_trainer_arguments(config)  # raises for a bf16-mixed model that cannot autocast without FSDP


def test_the_losses_read_are_the_validations_during_training(tmp_path):
    (tmp_path / "metrics.csv").write_text(
        "epoch,step,test/loss,val/loss\n0,9,,2.30\n0,19,,2.16\n0,29,,2.10\n1,30,,2.10\n1,30,2.2,\n"
    )
    assert validation_losses(tmp_path) == [(9, 2.30), (19, 2.16), (29, 2.10)]
    assert MAX_STEPS == 30


def test_the_kernel_tests_shape_classes_are_what_the_probes_key_by():
    """Every op with a probe case has realistic shape classes, and each is the class of the inputs it draws."""
    assert set(REALISTIC_CLASSES) == set(backends._PROBE_CASES)
    for op, classes in REALISTIC_CLASSES.items():
        case = backends.probe_case(op)
        for shape_class in classes:
            args, kwargs = case.inputs(shape_class, torch.device("cpu"), torch.float32)
            assert case.shape_class(*args, **kwargs) == tuple(shape_class.items()), op
    kernels = kernels_under_test()
    assert "mlstm.chunkwise triton" in kernels and "slstm.scan torch_compile_cuda" in kernels
    assert not any(kernel.endswith(" torch") or kernel == "slstm.scan torch_compile" for kernel in kernels)


@pytest.mark.slow
def test_the_gpu_suite_skips_cleanly_without_cuda_and_its_report_lists_every_model(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("checks the run without a CUDA device")
    junit = tmp_path / "gpu.xml"
    pytest_run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-m",
            "gpu",
            "tests/gpu",
            f"--junitxml={junit}",
        ],
        cwd=REPOSITORY_ROOT,
        capture_output=True,
        text=True,
    )
    assert pytest_run.returncode == 0 and " skipped" in pytest_run.stdout and "passed" not in pytest_run.stdout
    run = gpu_report.read_junit(junit)
    assert {result.outcome for result in run.results} == {"skipped"}
    assert {result.properties.get("model") for result in run.results} >= set(model_configs())
    page = gpu_report.report_text(run)
    assert "| hgrn2 | 0 | 0 |" in page and "| mlstm.chunkwise triton | 0 | 0 | 2 |" in page
    assert not math.isnan(run.seconds)
