"""The kernel probe on CUDA (kernels.probe): a backend whose probe child aborts or hangs is skipped by auto, which
runs the op on the next backend that passes; asked for by name, it raises. The fakes of tests/kernel_fakes.py (they
rank above every real backend of mlstm.chunkwise) stand for Triton 3.6's LLVM abort and fla's hangs; here their
probe runs on the GPU, and the next backend is a real CUDA one (TFLA or our Triton kernels, after their own
probes)."""

import pytest
import torch

import kernels.mlstm as mlstm
from kernels import probe
from kernels.probe import BackendProbeFailed
from tests import kernel_fakes

pytestmark = pytest.mark.gpu

CUDA = torch.device("cuda")


@pytest.fixture(autouse=True)
def fresh_verdicts(monkeypatch):
    """This process's verdicts forgotten (those on disk stay: the real backends' are the suite's)."""
    monkeypatch.setenv(probe.MODE_VARIABLE, "on")
    monkeypatch.setattr(probe, "_verdicts", {})
    monkeypatch.setattr(probe, "_announced", set())
    monkeypatch.delenv(kernel_fakes.WORKAROUND_VARIABLE, raising=False)
    kernel_fakes.CALLS.clear()


def cuda_cell_inputs(S=100, DH=64):
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, S, DH, generator=generator) for _ in range(3))
    i, f = torch.randn(1, 2, S, generator=generator), 3 + torch.randn(1, 2, S, generator=generator)
    return [x.to(CUDA) for x in (q, k, v, i, f)]


@pytest.mark.parametrize("failure, reason", [("abort", "killed by SIGABRT"), ("hang", "no result within 20 s")])
def test_auto_skips_a_backend_whose_probe_child_fails_on_the_gpu(failure, reason, monkeypatch, capfd):
    inputs = cuda_cell_inputs()
    expected = mlstm.chunkwise(*inputs, backend="torch")
    assert mlstm.chunkwise(*inputs).shape == expected.shape  # the real backends' probes, at their own time-out
    kernel_fakes.enable(monkeypatch, failure)
    monkeypatch.setenv(probe.TIMEOUT_VARIABLE, "20")  # the hang's
    capfd.readouterr()
    result = mlstm.chunkwise(*inputs)
    torch.testing.assert_close(result, expected, rtol=2e-2, atol=2e-3)  # TF32 in the CUDA kernels
    assert kernel_fakes.CALLS == []  # it never ran in this process
    lines = [line for line in capfd.readouterr().err.splitlines() if f"'fake_{failure}'" in line]
    assert len(lines) == 1 and reason in lines[0] and torch.cuda.get_device_name() in lines[0]
    with pytest.raises(BackendProbeFailed, match=f"'fake_{failure}' of mlstm.chunkwise .* failed its probe"):
        mlstm.chunkwise(*inputs, backend=f"fake_{failure}")
