"""The kernel probe (kernels.probe): an optional backend runs only after a child process has run it once.

The fakes of tests/kernel_fakes.py stand for the failures seen on a GPU (a compiler abort, a compile error, a hang,
a wrong result, an abort that an environment switch avoids); they are registered on the CPU so that the whole path
runs here: a fake that aborts would take this test process down if the probe let it run.
"""

import json
import math
import subprocess
import sys

import pytest
import torch

import kernels.linear_attention  # noqa: F401  (registers the probe cases of its ops)
import kernels.mlstm as mlstm
import kernels.selective_scan  # noqa: F401
import kernels.slstm  # noqa: F401
from experiments.config.configuration import compose_run_config
from experiments.training.train import run_training
from kernels import backends, probe
from kernels.probe import BackendProbeFailed
from tests import kernel_fakes

TINY_RUN = [
    "model=xlstm_1_0",
    "task=parity",
    "trainer.max_steps=3",
    "trainer.val_every_steps=3",
    "trainer.batch_size=4",
    "model.embedding_dim=16",
    "task.val_samples=8",
    "task.test_samples=8",
    "task.eval_max_length=48",
    "trainer.num_threads=1",
]


@pytest.fixture(autouse=True)
def probe_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(probe.CACHE_VARIABLE, str(tmp_path / "probes"))
    monkeypatch.delenv(probe.MODE_VARIABLE, raising=False)
    monkeypatch.delenv(kernel_fakes.WORKAROUND_VARIABLE, raising=False)
    monkeypatch.setattr(probe, "_verdicts", {})
    monkeypatch.setattr(probe, "_announced", set())
    kernel_fakes.CALLS.clear()
    return tmp_path / "probes"


def cell_inputs(S=20, DH=16):
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, S, DH, generator=generator) for _ in range(3))
    i, f = torch.randn(1, 2, S, generator=generator), 3 + torch.randn(1, 2, S, generator=generator)
    return q, k, v, i, f


def probe_lines(captured: str) -> list[str]:
    return [line for line in captured.splitlines() if line.startswith("xlstm-suite: kernel backend")]


def test_auto_skips_a_backend_whose_probe_aborts_with_one_line_and_runs_the_torch_path(
    monkeypatch, capfd, probe_cache, tmp_path
):
    kernel_fakes.enable(monkeypatch, "abort")
    inputs = cell_inputs()
    expected = mlstm.chunkwise(*inputs, backend="torch")
    for _ in range(3):
        torch.testing.assert_close(mlstm.chunkwise(*inputs), expected, rtol=0, atol=0)
    assert kernel_fakes.CALLS == []  # never ran here: it would have aborted this process
    (line,) = probe_lines(capfd.readouterr().err)
    assert "'fake_abort' of mlstm.chunkwise (float32, head_dim 16, chunk_size 64" in line
    assert "killed by SIGABRT" in line and "using the next backend" in line
    (cached,) = probe_cache.glob("mlstm.chunkwise-fake_abort-*.json")
    assert f"{probe.MODE_VARIABLE}=rerun, or delete {cached}" in line
    assert json.loads(cached.read_text())["passed"] is False

    # asked for by name, the same backend raises (from the verdict of this process: no second probe)
    with pytest.raises(
        BackendProbeFailed,
        match="'fake_abort' of mlstm.chunkwise .* failed its probe .*SIGABRT.*"
        "use backend='auto' \\(skips it\\) or 'torch'",
    ):
        mlstm.chunkwise(*inputs, backend="fake_abort")

    # a new process reads the cached verdict, and says it once
    verdict_written = cached.stat().st_mtime_ns
    script = (
        "import torch, kernels.mlstm as m; from tests import kernel_fakes; "
        "[m.chunkwise(*(torch.randn(1, 2, 5, 16),) * 3, torch.randn(1, 2, 5), torch.randn(1, 2, 5)) for _ in '12']"
    )
    child = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert len(probe_lines(child.stderr)) == 1
    assert cached.stat().st_mtime_ns == verdict_written  # no second probe

    # a training run (a new process's verdicts: from disk) says it once and finishes on the torch path
    monkeypatch.setattr(probe, "_verdicts", {})
    monkeypatch.setattr(probe, "_announced", set())
    metrics = run_training(compose_run_config(TINY_RUN), tmp_path / "run")  # its cells: head dim 16, as above
    assert metrics["train/steps"] == 3 and all(math.isfinite(value) for value in metrics.values())
    assert len(probe_lines(capfd.readouterr().err)) == 1 and kernel_fakes.CALLS == []


@pytest.fixture
def counted_probes(monkeypatch):
    """Probes that pass without a child process; the list of the requests they were given."""
    requests = []

    def probe_without_child(request, backend):
        requests.append(request)
        return True, "", {}

    monkeypatch.setattr(probe, "_probe", probe_without_child)
    return requests


def test_each_dtype_and_shape_class_is_probed_once_and_the_verdict_keyed_by_the_stack(monkeypatch, counted_probes):
    kernel_fakes.enable(monkeypatch, "wrong")
    mlstm.chunkwise(*cell_inputs(S=20, DH=8))
    mlstm.chunkwise(*cell_inputs(S=33, DH=8))  # another length: the same class
    assert len(counted_probes) == 1
    mlstm.chunkwise(*cell_inputs(DH=16))
    mlstm.chunkwise(*(x.double() for x in cell_inputs(DH=16)))
    mlstm.chunkwise(*cell_inputs(DH=16), chunk_size=32)
    assert [(r["dtype"], r["shape_class"]) for r in counted_probes] == [
        ("float32", {"head_dim": 8, "chunk_size": 64}),
        ("float32", {"head_dim": 16, "chunk_size": 64}),
        ("float64", {"head_dim": 16, "chunk_size": 64}),
        ("float32", {"head_dim": 16, "chunk_size": 32}),
    ]
    assert set(counted_probes[0]["versions"]) == {"torch", "triton"}
    assert counted_probes[0]["modules"] == ["tests.kernel_fakes", "kernels.mlstm.chunkwise"]
    assert counted_probes[0]["device_name"] and counted_probes[0]["sources"] != "unknown"

    monkeypatch.setattr(probe, "_verdicts", {})  # a new process: the verdicts come from disk
    mlstm.chunkwise(*cell_inputs(DH=16), chunk_size=32)
    assert len(counted_probes) == 4


def test_rerun_probes_again_off_trusts_the_backend_and_a_bad_mode_is_named(monkeypatch, counted_probes):
    kernel_fakes.enable(monkeypatch, "wrong")
    mlstm.chunkwise(*cell_inputs())
    monkeypatch.setattr(probe, "_verdicts", {})
    monkeypatch.setenv(probe.MODE_VARIABLE, "rerun")
    mlstm.chunkwise(*cell_inputs())
    mlstm.chunkwise(*cell_inputs())
    mlstm.chunkwise(*cell_inputs(DH=32))
    assert len(counted_probes) == 3  # the verdict on disk probed again (once in this process), and the new class
    monkeypatch.setenv(probe.MODE_VARIABLE, "off")
    kernel_fakes.CALLS.clear()
    mlstm.chunkwise(*cell_inputs(DH=64))
    assert len(counted_probes) == 3 and kernel_fakes.CALLS == ["wrong"]
    monkeypatch.setenv(probe.MODE_VARIABLE, "sometimes")
    with pytest.raises(
        ValueError, match="XLSTM_SUITE_KERNEL_PROBE='sometimes'; valid choices: \\['on', 'rerun', 'off'\\]"
    ):
        mlstm.chunkwise(*cell_inputs())


def test_a_compile_error_fails_the_probe_with_its_first_line(monkeypatch, capfd):
    kernel_fakes.enable(monkeypatch, "raises")
    mlstm.chunkwise(*cell_inputs())
    (line,) = probe_lines(capfd.readouterr().err)
    assert (
        "'fake_raises'" in line and "(RuntimeError: CompilationError: at 12:4: unsupported layout for tl.dot)" in line
    )
    assert kernel_fakes.CALLS == []


def test_a_probe_that_does_not_finish_in_time_fails(monkeypatch, capfd):
    kernel_fakes.enable(monkeypatch, "hang")
    monkeypatch.setenv(probe.TIMEOUT_VARIABLE, "2")
    mlstm.chunkwise(*cell_inputs())
    (line,) = probe_lines(capfd.readouterr().err)
    assert "'fake_hang'" in line and "no result within 2 s" in line


def test_a_workaround_is_applied_only_when_the_probe_needs_it(monkeypatch, capfd):
    kernel_fakes.enable(monkeypatch, "needs_workaround")
    inputs = cell_inputs()
    result = mlstm.chunkwise(*inputs)
    torch.testing.assert_close(result, mlstm.chunkwise(*inputs, backend="torch"))
    assert kernel_fakes.CALLS == ["needs_workaround"]  # it ran here, under the workaround the probe found
    (line,) = [line for line in capfd.readouterr().err.splitlines() if line.startswith("xlstm-suite:")]
    assert f"needs {kernel_fakes.WORKAROUND_VARIABLE}=1 on this stack (the probe process was killed by SIGABRT" in line


@pytest.mark.parametrize("op", sorted(backends._PROBE_CASES))
def test_every_probe_case_passes_the_torch_backend_and_fails_a_wrong_one(op, monkeypatch):
    """Each op's tiny case runs its torch backend against itself in float32 and bfloat16, and catches an output
    with its features reversed (the comparison sees the value, not only that something ran)."""
    for dtype in (torch.float32, torch.bfloat16):
        request = {
            "op": op,
            "backend": "torch",
            "modules": [],
            "device": "cpu",
            "dtype": str(dtype)[6:],
            "shape_class": dict(_typical_shape_class(op)),
        }
        assert probe.run_probe(request) == (True, "")
    torch_function = backends.backend(op, "torch").function

    def wrong(*args, **kwargs):
        result = torch_function(*args, **kwargs)
        return (result[0].flip(-1), *result[1:]) if isinstance(result, tuple) else result.flip(-1)

    monkeypatch.setitem(
        backends._REGISTRY,
        op,
        {**backends._REGISTRY[op], "wrong": backends.Backend("wrong", wrong, lambda device: True, 0)},
    )
    request = {
        "op": op,
        "backend": "wrong",
        "modules": [],
        "device": "cpu",
        "dtype": "float32",
        "shape_class": dict(_typical_shape_class(op)),
    }
    passed, reason = probe.run_probe(request)
    assert not passed and "differ from the torch backend's" in reason


def _typical_shape_class(op):
    return {
        "mlstm.chunkwise": {"head_dim": 16, "chunk_size": 32},
        "mlstm.step": {"head_dim": 16},
        "slstm.scan": {"head_dim": 8},
        "selective_scan": {"state_dim": 4},
        "hgrn": {},
        "retention": {"key_dim": 8, "value_dim": 16, "per_step_decay": 1},
    }.get(op, {"key_dim": 8, "value_dim": 16})
