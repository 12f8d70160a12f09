"""The sLSTM scan with its cell under torch.compile equals the torch scan; auto compiles only on CUDA.

The default suite compiles with ``aot_eager`` (dynamo and autograd tracing, no code generation, seconds);
the inductor backend that ``backend="torch_compile"`` runs is checked by the slow tests.
"""

import importlib.util

import pytest
import torch
from torch._dynamo.utils import counters

from kernels.backends import available, resolve
from kernels.slstm import SLSTMState, compiled, initial_state
from kernels.slstm.fused import scan_fused
from kernels.slstm.scan import scan_autograd
from kernels.slstm.triton import scan_triton
from models.xlstm.config import SLSTMLayerConfig
from models.xlstm.slstm_layer import SLSTMLayer

B, S, NH, DH = 2, 7, 2, 4
CPU, CUDA = torch.device("cpu"), torch.device("cuda")


def random_inputs(dtype=torch.float64, seed=0, seq_len=S):
    """wx (B, S, 4, NH, DH), R (4, NH, DH, DH), b (4, NH, DH), all leaves requiring grad."""
    generator = torch.Generator().manual_seed(seed)
    wx = torch.randn(B, seq_len, 4, NH, DH, generator=generator, dtype=dtype)
    R = 0.5 * torch.randn(4, NH, DH, DH, generator=generator, dtype=dtype)
    b = torch.randn(4, NH, DH, generator=generator, dtype=dtype)
    return tuple(tensor.requires_grad_() for tensor in (wx, R, b))


def random_state(dtype=torch.float64, seed=1) -> SLSTMState:
    generator = torch.Generator().manual_seed(seed)
    h, c = (torch.randn(B, NH, DH, generator=generator, dtype=dtype).requires_grad_() for _ in range(2))
    n = torch.rand(B, NH, DH, generator=generator, dtype=dtype) + 0.5
    m = torch.randn(B, NH, DH, generator=generator, dtype=dtype)
    return SLSTMState(h, c, n.requires_grad_(), m)


def outputs_and_gradients(scan_function, wx, R, b, state, forget_gate, clip):
    """h, the final state and the gradients of a random linear loss of h and the final c w.r.t. every leaf."""
    h, final = scan_function(wx, R, b, state, forget_gate, clip)
    weights = torch.randn(h.shape, generator=torch.Generator().manual_seed(2), dtype=h.dtype)
    loss = (h * weights).sum() + final.c.sum()
    leaves = [wx, R, b] + [x for x in state if x.requires_grad]
    return (h, *final), torch.autograd.grad(loss, leaves)


def aot_eager_scan(*args):
    return compiled.scan_compiled(*args, compiler="aot_eager")


def default_state(dtype=torch.float64) -> SLSTMState:
    return initial_state(B, NH, DH, dtype=dtype, device=CPU)


# --- backend selection ----------------------------------------------------------------------------------------


def test_auto_compiles_on_cuda_only_and_both_are_selectable():
    assert resolve("slstm.scan", "auto", CPU) is scan_fused
    # on CUDA the Triton scan ranks above the compiled one where triton imports (the test extra installs it)
    on_cuda = [scan_triton, compiled.scan_compiled] if importlib.util.find_spec("triton") else [compiled.scan_compiled]
    tried = [backend for backend in available("slstm.scan", CUDA) if backend.probed]
    assert [backend.function for backend in tried] == on_cuda  # each after its probe (kernels.probe)
    assert resolve("slstm.scan", "torch_compile", CPU) is compiled.scan_compiled
    assert resolve("slstm.scan", "torch", CUDA) is scan_fused


def test_compiled_cell_is_built_once_per_compiler_and_checks_its_name():
    assert compiled.compiled_cell("aot_eager") is compiled.compiled_cell("aot_eager")
    with pytest.raises(ValueError, match=r"'tvm'.*\['inductor', 'aot_eager'\]"):
        compiled.compiled_cell("tvm")


# --- aot_eager: the compile path in the default suite ---------------------------------------------------------


@pytest.mark.parametrize("forget_gate", ["sigmoid", "exp"])
@pytest.mark.parametrize("clip", [None, 0.05])
@pytest.mark.parametrize("given_state", [False, True])
def test_compiled_scan_equals_torch_scan(forget_gate, clip, given_state):
    wx, R, b = random_inputs()
    state = random_state() if given_state else default_state()
    expected_outputs, expected_grads = outputs_and_gradients(scan_autograd, wx, R, b, state, forget_gate, clip)
    outputs, grads = outputs_and_gradients(aot_eager_scan, wx, R, b, state, forget_gate, clip)
    for actual, expected in zip(outputs + grads, expected_outputs + expected_grads):
        torch.testing.assert_close(actual, expected, rtol=1e-12, atol=1e-12)


def test_same_shapes_do_not_recompile():
    """Two graphs per shape (the first step's state has no gradient yet), then none for further calls."""
    wx, R, b = random_inputs(dtype=torch.float32)
    aot_eager_scan(wx, R, b, default_state(torch.float32), "sigmoid", None)
    graphs = counters["stats"]["unique_graphs"]
    for seed in (3, 4):
        aot_eager_scan(*random_inputs(dtype=torch.float32, seed=seed), default_state(torch.float32), "sigmoid", None)
    aot_eager_scan(*random_inputs(dtype=torch.float32, seq_len=S + 3), default_state(torch.float32), "sigmoid", None)
    assert counters["stats"]["unique_graphs"] == graphs


# --- inductor: what backend="torch_compile" runs --------------------------------------------------------------


@pytest.mark.slow
def test_torch_compile_backend_equals_torch_scan():
    wx, R, b = random_inputs()
    expected_outputs, expected_grads = outputs_and_gradients(scan_autograd, wx, R, b, random_state(), "sigmoid", 10.0)
    outputs, grads = outputs_and_gradients(compiled.scan_compiled, wx, R, b, random_state(), "sigmoid", 10.0)
    for actual, expected in zip(outputs + grads, expected_outputs + expected_grads):
        torch.testing.assert_close(actual, expected, rtol=1e-10, atol=1e-10)


@pytest.mark.slow
def test_layer_backend_field_switches_compilation():
    torch.manual_seed(0)
    configs = {backend: SLSTMLayerConfig(num_heads=NH, backend=backend) for backend in ("torch", "torch_compile")}
    layers = {
        backend: SLSTMLayer(config, NH * DH, num_blocks=1, block_index=0).double()
        for backend, config in configs.items()
    }
    layers["torch_compile"].load_state_dict(layers["torch"].state_dict())
    x = torch.randn(B, S, NH * DH, dtype=torch.float64)
    for layer in layers.values():
        layer(x).square().sum().backward()
    torch.testing.assert_close(layers["torch_compile"](x), layers["torch"](x), rtol=1e-10, atol=1e-10)
    reference = dict(layers["torch"].named_parameters())
    for name, parameter in layers["torch_compile"].named_parameters():
        torch.testing.assert_close(parameter.grad, reference[name].grad, rtol=1e-10, atol=1e-10, msg=name)
