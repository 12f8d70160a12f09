"""The Triton sLSTM scan (backend ``"triton"`` of ``"slstm.scan"``) equals the torch backend: h, the final state and
the gradients of wx, R, b and the initial h, c, n; both forget gates, with and without the recurrent gradient clip,
from the default state and from a given one with n == 0 entries, head dims that are not powers of two, head dims
spanning several tiles of R, batches spanning several programs; float32 tight, bfloat16 (and autocast) loose.

How the interpreter is switched on. Triton 3.6 and 3.9 decide when ``@triton.jit`` decorates a kernel, i.e. when
kernels/slstm/triton/forward.py is first imported: the decorator returns an ``InterpretedFunction`` if
``triton.knobs.runtime.interpret`` is true, which reads ``TRITON_INTERPRET`` at that moment, and a ``JITFunction``
(compiled for a GPU at launch) otherwise. Setting the variable later has no effect on kernels already decorated,
and setting it in the pytest process would interpret every Triton kernel decorated afterwards (fla's, which other
modules import). So the interpreter cases run in one child process per module fixture (per pytest-xdist worker),
started with ``TRITON_INTERPRET=1`` whatever the order of the tests: the parent draws the inputs, the child
(``python -m tests.kernels.test_slstm_triton``) checks that the kernels are interpreted, runs the Triton backend forward
and backward and returns outputs and gradients, and the parent compares them with the torch backend run here in
float64 on the same (rounded) inputs. The child also reports whether importing ``kernels`` imported triton (it must
not: triton is imported when the backend first runs). Two interpreter faults seen here: Triton 3.9's (and 3.6's)
interpreter multiplies bfloat16 ``tl.dot`` operands as raw integers, so the kernels cast them to float32 first when
interpreted (exact products: the same values); Triton 3.6's interpreter cannot loop over a scalar argument with
numpy 2.4 (it takes int() of a one-element array), so these tests need Triton 3.9 (the test extra's) there.

A slow test compiles both kernels for sm_90a and sm_80 without a GPU (``triton.compile`` on a ``GPUTarget``, with the
alignment a real launch specialises on), in a child process too: the interpreter would not see a compile error, and
a kernel whose pipelined loads outgrow shared memory would fail only at launch. The GPU tests (``-m gpu``) run the
compiled kernels at the paper's head dims in-process.
"""

import dataclasses
import json
import os
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from kernels.backends import _REGISTRY, resolve
from kernels.slstm import SLSTMState, initial_state, scan

ROOT = Path(__file__).resolve().parents[2]
CPU, CUDA = torch.device("cpu"), torch.device("cuda")
CHILD_TIMEOUT_SECONDS = 900
# largest error against the float64 torch backend, relative to the largest |value| of each compared tensor
TOLERANCE = {"float32": 2e-5, "bfloat16": 3e-2}


@dataclass(frozen=True)
class Case:
    batch: int
    steps: int
    heads: int
    head_dim: int
    forget_gate: str = "sigmoid"
    clip: float | None = None
    start: str = "default"  # or "given": a random state with n == 0 (no history) in about a third of the entries
    wx_dtype: str = "float32"  # R, b and the state are float32, as the layer's parameters
    autocast: bool = False  # run under torch.autocast(bfloat16)
    max_block_d: int | None = None  # smaller tiles of R than the default: several tiles per head dim
    scale: float = 1.0  # of wx: large values make the stabiliser switch between the input and the forget path
    strided: bool = False  # wx with its gate and head dims swapped in memory
    halves: bool = False  # scan the first half, then the second from the state it returned
    seed: int = 0

    @property
    def precision(self) -> str:
        return "bfloat16" if self.autocast or self.wx_dtype == "bfloat16" else "float32"


CASES = {
    "float32 sigmoid, default state, head dim 12, strided wx": Case(3, 6, 2, 12, strided=True),
    "float32 exp, clip, given state, in two halves": Case(2, 6, 1, 16, "exp", 0.05, "given", halves=True, seed=1),
    "float32 exp, clip, given state, head dim 24 in two tiles": Case(2, 5, 1, 24, "exp", 0.05, "given", max_block_d=16),
    "float32 sigmoid, clip, given state, 17 rows in two batch tiles": Case(17, 4, 1, 16, "sigmoid", 0.05, "given"),
    "bfloat16 wx, exp, default state, head dim 16": Case(3, 6, 1, 16, "exp", wx_dtype="bfloat16"),
    "autocast bfloat16, sigmoid, clip, given state, head dim 12": Case(
        3, 5, 1, 12, "sigmoid", 0.5, "given", autocast=True
    ),
}
SLOW_CASES = {
    "float32 sigmoid, large gates, 40 steps": Case(2, 40, 1, 24, scale=15.0, seed=1),
    "float32 exp, given state, head dim 72 in three default tiles": Case(3, 12, 2, 72, "exp", None, "given", seed=2),
    "float32 exp, clip, large gates, given state": Case(3, 30, 1, 20, "exp", 0.1, "given", scale=8.0, seed=3),
    "bfloat16 wx, sigmoid, clip, given state, head dim 48 in three tiles": Case(
        5, 16, 2, 48, "sigmoid", 1.0, "given", wx_dtype="bfloat16", max_block_d=16, seed=4
    ),
    "autocast bfloat16, exp, default state, head dim 40": Case(18, 10, 1, 40, "exp", autocast=True, seed=5),
}


def case_inputs(case: Case) -> dict[str, torch.Tensor]:
    """wx (B, S, 4, NH, DH) in the case's dtype; R, b, the initial state and the loss weights in float32."""
    B, S, NH, DH = case.batch, case.steps, case.heads, case.head_dim
    generator = torch.Generator().manual_seed(case.seed)

    def normal(*shape):
        return torch.randn(*shape, generator=generator)

    inputs = dict(
        wx=(case.scale * normal(B, S, 4, NH, DH)).to(getattr(torch, case.wx_dtype)),
        R=normal(4, NH, DH, DH) / DH**0.5,
        b=normal(4, NH, DH),
    )
    if case.start == "given":
        n = torch.rand(B, NH, DH, generator=generator) + 0.5
        n[torch.rand(B, NH, DH, generator=generator) < 0.3] = 0.0  # no history: m (and c's gradient) must not matter
        inputs |= dict(h0=normal(B, NH, DH), c0=normal(B, NH, DH), n0=n, m0=normal(B, NH, DH))
    else:
        inputs |= dict(zip(("h0", "c0", "n0", "m0"), initial_state(B, NH, DH, dtype=torch.float32, device=CPU)))
    return inputs | dict(
        weight_h=normal(B, S, NH, DH),
        weight_h_last=normal(B, NH, DH),
        weight_c_last=normal(B, NH, DH),
        weight_n_last=normal(B, NH, DH),
    )


def outputs_and_gradients(scan_function, inputs, case: Case, dtype=None):
    """h, the final (h, c, n, m) and the gradients of a random linear loss of h and the final h, c, n with respect to
    wx, R, b and the initial h, c, n; inputs cast to ``dtype`` if given."""
    cast = (lambda tensor: tensor.to(dtype)) if dtype is not None else (lambda tensor: tensor)
    wx, R, b, h0, c0, n0 = (cast(inputs[name]).detach() for name in ("wx", "R", "b", "h0", "c0", "n0"))
    if case.strided:
        wx = wx.transpose(2, 3).contiguous().transpose(2, 3)  # (B, S, 4, NH, DH) stored as (B, S, NH, 4, DH)
    leaves = [tensor.requires_grad_() for tensor in (wx, R, b, h0, c0, n0)]
    state = SLSTMState(h0, c0, n0, cast(inputs["m0"]))
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=case.autocast):
        if case.halves:
            middle = case.steps // 2
            h_first, state = scan_function(wx[:, :middle], R, b, state, case.forget_gate, case.clip)
            h_second, final = scan_function(wx[:, middle:], R, b, state, case.forget_gate, case.clip)
            h = torch.cat([h_first, h_second], dim=1)  # (B, S, NH, DH)
        else:
            h, final = scan_function(wx, R, b, state, case.forget_gate, case.clip)
    loss = (h.double() * inputs["weight_h"].double()).sum()
    for field, weight in zip(final[:3], ("weight_h_last", "weight_c_last", "weight_n_last")):
        loss = loss + (field.double() * inputs[weight].double()).sum()
    return [h, *final], list(torch.autograd.grad(loss, leaves))


def torch_reference(case: Case, inputs):
    """The torch backend in float64 on the same (rounded) inputs, without autocast, the whole sequence at once."""

    def torch_backend(wx, R, b, state, forget_gate, clip):
        return scan(
            wx,
            R,
            b,
            initial_state=state,
            return_state=True,
            forget_gate=forget_gate,
            recurrent_grad_clip=clip,
            backend="torch",
        )

    whole = dataclasses.replace(case, autocast=False, halves=False)
    return outputs_and_gradients(torch_backend, inputs, whole, torch.float64)


def assert_close_to_reference(values, expected, names, tolerance):
    for name, value, reference in zip(names, values, expected):
        assert value.shape == reference.shape, name
        assert torch.isfinite(value).all(), name
        error = (value.double() - reference).abs().max().item()
        scale = reference.abs().max().item()
        assert error <= tolerance * scale + 1e-12, f"{name}: max error {error:.3g} vs max |value| {scale:.3g}"


OUTPUT_NAMES = ("h", "final h", "final c", "final n", "final m")
GRADIENT_NAMES = ("wx", "R", "b", "initial h", "initial c", "initial n")


# --- the interpreter child ----------------------------------------------------------------------------------------


def run_interpreted(cases: dict[str, Case], folder: Path) -> dict:
    """Run ``cases`` on the Triton backend in a child process under TRITON_INTERPRET=1; their results by name."""
    request, response = folder / "cases.pt", folder / "results.pt"
    torch.save({name: (dataclasses.asdict(case), case_inputs(case)) for name, case in cases.items()}, request)
    environment = {**os.environ, "TRITON_INTERPRET": "1"}
    child = subprocess.run(
        [sys.executable, "-m", "tests.kernels.test_slstm_triton", str(request), str(response)],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT_SECONDS,
    )
    assert child.returncode == 0, f"interpreter child failed:\n{child.stdout[-3000:]}\n{child.stderr[-6000:]}"
    return torch.load(response)


def child_main(request: Path, response: Path) -> None:
    """In the child: run every case of ``request`` on the Triton backend and save outputs and gradients."""
    import kernels.slstm  # noqa: F401  (registers every sLSTM backend: none may import triton)
    import kernels.slstm.triton  # noqa: F401

    triton_imported_by_kernels = "triton" in sys.modules
    from triton.runtime.interpreter import InterpretedFunction

    from kernels.slstm.triton import adapter, backward, forward, function

    results = {
        "triton_imported_by_kernels": triton_imported_by_kernels,
        "interpreted": all(
            isinstance(kernel, InterpretedFunction) for kernel in (forward._forward_kernel, backward._backward_kernel)
        ),
    }
    default_blocks = function.MAX_BLOCK_D
    for name, (fields, inputs) in torch.load(request).items():
        case = Case(**fields)
        function.MAX_BLOCK_D = dict.fromkeys(default_blocks, case.max_block_d) if case.max_block_d else default_blocks
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a fallback to the torch backend would warn
            outputs, gradients = outputs_and_gradients(adapter.scan_triton, inputs, case)
        results[name] = dict(outputs=[x.detach() for x in outputs], gradients=gradients)
    torch.save(results, response)


# --- compiled without a GPU ---------------------------------------------------------------------------------------

# target -> (compute capability, shared memory a block may use in bytes)
COMPILE_TARGETS = {"sm_90a (H100, H200)": (90, 232448), "sm_80 (A100)": (80, 167936)}
MATMUL_POINTERS = {"wx", "R", "H", "grad_h", "grad_preactivations"}  # in the matmul dtype; every other pointer float32
UNIT_STRIDES = {"stride_wx_dim", "stride_r_out", "stride_gh_dim"}  # contiguous head dims: Triton specialises 1


def compile_main(response: Path) -> None:
    """In the child: compile both kernels per target and matmul dtype at 16-aligned shapes; save their shared memory."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from kernels.slstm.triton import backward, forward, function

    kernels = {
        "forward": (forward._forward_kernel, dict(STORE_PREACTIVATIONS=True)),
        "backward": (backward._backward_kernel, dict(HAS_CLIP=True)),
    }
    shared = {}
    for target_name, (capability, _) in COMPILE_TARGETS.items():
        for dtype, type_name in ((torch.bfloat16, "bf16"), (torch.float32, "fp32")):
            tiles = function.tile_sizes(192, dtype)
            for kernel_name, (kernel, options) in kernels.items():
                constants = dict(
                    FORGET_EXP=False,
                    DOT_PRECISION=forward.dot_precision(torch.empty(0, dtype=dtype)),
                    UPCAST=False,
                    BLOCK_B=tiles["block_b"],
                    BLOCK_D=tiles["block_d"],
                    **options,
                )
                constants |= {name: 1 for name in UNIT_STRIDES if name in kernel.arg_names}
                signature = {}
                for name in kernel.arg_names:
                    if name in constants:
                        signature[name] = "constexpr"
                    elif name == "clip":
                        signature[name] = "fp32"
                    elif name.startswith("stride_") or name in ("batch", "seq_len", "num_heads", "head_dim"):
                        signature[name] = "i32"
                    else:
                        signature[name] = f"*{type_name}" if name in MATMUL_POINTERS else "*fp32"
                aligned = {
                    (index,): [["tt.divisibility", 16]]
                    for index, name in enumerate(kernel.arg_names)
                    if signature[name] != "constexpr" and name not in ("num_heads", "clip")
                }
                compiled = triton.compile(
                    ASTSource(kernel, signature, constants, aligned),
                    target=GPUTarget("cuda", capability, 32),
                    options=dict(num_warps=tiles["num_warps"]),
                )
                assert compiled.asm["cubin"], (target_name, type_name, kernel_name)
                shared[f"{target_name} {type_name} {kernel_name}"] = compiled.metadata.shared
    response.write_text(json.dumps(shared))


@pytest.mark.slow
def test_the_kernels_compile_for_hopper_and_ampere_within_their_shared_memory(tmp_path):
    response = tmp_path / "shared.json"
    environment = {name: value for name, value in os.environ.items() if name != "TRITON_INTERPRET"}
    child = subprocess.run(
        [sys.executable, "-m", "tests.kernels.test_slstm_triton", "compile", str(response)],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT_SECONDS,
    )
    assert child.returncode == 0, f"compile child failed:\n{child.stderr[-6000:]}"
    shared = json.loads(response.read_text())
    assert len(shared) == 2 * 2 * len(COMPILE_TARGETS)
    for key, used in shared.items():
        limit = next(limit for name, (_, limit) in COMPILE_TARGETS.items() if key.startswith(name))
        assert used <= limit, f"{key}: {used} bytes of shared memory, the target has {limit}"


@pytest.fixture(scope="module")
def interpreted(tmp_path_factory):
    return run_interpreted(CASES, tmp_path_factory.mktemp("slstm_triton"))


@pytest.fixture(scope="module")
def interpreted_slow(tmp_path_factory):
    return run_interpreted(SLOW_CASES, tmp_path_factory.mktemp("slstm_triton_slow"))


def check_case(case: Case, result: dict) -> None:
    inputs = case_inputs(case)
    expected_outputs, expected_gradients = torch_reference(case, inputs)
    matmul_dtype = getattr(torch, case.precision)
    assert result["outputs"][0].dtype == matmul_dtype  # h in the matmul dtype
    assert all(field.dtype == torch.float32 for field in result["outputs"][1:])  # the final state in float32
    tolerance = TOLERANCE[case.precision]
    assert_close_to_reference(result["outputs"], expected_outputs, OUTPUT_NAMES, tolerance)
    assert_close_to_reference(result["gradients"], expected_gradients, GRADIENT_NAMES, tolerance)


@pytest.mark.parametrize("name", list(CASES))
def test_triton_scan_equals_torch_backend(name, interpreted):
    assert interpreted["interpreted"], "the child ran compiled kernels: TRITON_INTERPRET was not read"
    check_case(CASES[name], interpreted[name])


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SLOW_CASES))
def test_triton_scan_equals_torch_backend_longer(name, interpreted_slow):
    check_case(SLOW_CASES[name], interpreted_slow[name])


def test_importing_the_kernels_does_not_import_triton(interpreted):
    assert not interpreted["triton_imported_by_kernels"]


# --- registration and fallback (no kernel runs) -------------------------------------------------------------------


def test_registered_above_the_compiled_scan_and_only_for_cuda():
    import importlib.util

    from kernels.slstm.triton import scan_triton

    backends = _REGISTRY["slstm.scan"]
    assert backends["triton"].priority > backends["torch_compile_cuda"].priority
    assert not backends["triton"].is_available(CPU)
    assert backends["triton"].is_available(CUDA) == (importlib.util.find_spec("triton") is not None)
    with pytest.raises(RuntimeError, match="not available on device cpu"):
        resolve("slstm.scan", "triton", CPU)
    if importlib.util.find_spec("triton") is not None:
        assert backends["triton"].function is scan_triton


def test_float64_runs_on_the_torch_backend_with_one_warning(monkeypatch):
    from kernels.slstm.triton import adapter

    monkeypatch.setattr(adapter, "_warned", set())
    case = Case(2, 3, 1, 4, start="given")
    inputs = case_inputs(case)
    expected_outputs, expected_gradients = torch_reference(case, inputs)
    with pytest.warns(RuntimeWarning, match=r"matmul dtype torch.float64 .*using the torch backend"):
        outputs, gradients = outputs_and_gradients(adapter.scan_triton, inputs, case, torch.float64)
    for value, expected in zip(outputs + gradients, expected_outputs + expected_gradients):
        torch.testing.assert_close(value, expected, rtol=0, atol=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same reason warns once
        outputs_and_gradients(adapter.scan_triton, inputs, case, torch.float64)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message given without a CUDA device")
def test_the_gpu_benchmark_imports_without_cuda_and_says_it_needs_one():
    from benchmarks import gpu_slstm

    with pytest.raises(RuntimeError, match=r"needs a CUDA device"):
        gpu_slstm.slstm_grid(repeats=1)


# --- on a GPU: the compiled kernels at the paper's head dims ------------------------------------------------------


def gpu_inputs(batch, steps, heads, head_dim, seed=0):
    """wx (B, S, 4, NH, DH), R (4, NH, DH, DH) scaled by 1/sqrt(DH), b (4, NH, DH), loss weights; float32 on CUDA."""
    generator = torch.Generator().manual_seed(seed)
    wx = torch.randn(batch, steps, 4, heads, head_dim, generator=generator)
    R = torch.randn(4, heads, head_dim, head_dim, generator=generator) / head_dim**0.5
    b = torch.randn(4, heads, head_dim, generator=generator)
    weight = torch.randn(batch, steps, heads, head_dim, generator=generator)
    return [tensor.to(CUDA) for tensor in (wx, R, b, weight)]


def gpu_run(backend, wx, R, b, weight, *, autocast: bool):
    """h, the final c and the gradients of sum(h * weight) + sum(final c) for wx, R, b, on ``backend``."""
    leaves = [tensor.detach().requires_grad_() for tensor in (wx, R, b)]
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
        h, final = scan(*leaves, return_state=True, backend=backend)
    loss = (h.double() * weight.double()).sum() + final.c.double().sum()
    return [h.detach(), final.c.detach(), *torch.autograd.grad(loss, leaves)]


def relative_errors(values, references) -> list[float]:
    return [
        ((value.double() - reference.double()).abs().max() / reference.double().abs().max()).item()
        for value, reference in zip(values, references)
    ]


# precision -> (wx dtype, autocast, error allowed whatever the torch backend's, multiple of the torch backend's error)
GPU_PRECISIONS = {"float32": (torch.float32, False, 1e-4, 4.0), "bfloat16 autocast": (torch.bfloat16, True, 1e-2, 2.0)}


@pytest.mark.gpu
@pytest.mark.parametrize("precision", list(GPU_PRECISIONS))
@pytest.mark.parametrize("head_dim", [192, 256])
@pytest.mark.parametrize("steps", [512, 2048])
def test_gpu_triton_scan_is_as_accurate_as_the_torch_backend(precision, head_dim, steps):
    """h, the final c and the gradients of wx, R, b against the torch backend in float64, on the same inputs: within
    an absolute bound, or within a multiple of the torch backend's own error in the same precision (in bfloat16
    autocast its states are bfloat16, ours float32; over 2048 steps both errors grow alike)."""
    wx_dtype, autocast, bound, multiple = GPU_PRECISIONS[precision]
    wx, R, b, weight = gpu_inputs(4, steps, 2, head_dim)
    wx = wx.to(wx_dtype)
    reference = gpu_run("torch", *(tensor.double() for tensor in (wx, R, b, weight)), autocast=False)
    ours = relative_errors(gpu_run("triton", wx, R, b, weight, autocast=autocast), reference)
    peer = relative_errors(gpu_run("torch", wx, R, b, weight, autocast=autocast), reference)
    for name, error, peer_error in zip(("h", "final c", "wx", "R", "b"), ours, peer):
        assert error <= max(bound, multiple * peer_error), f"{name}: ours {error:.3g}, torch backend {peer_error:.3g}"


if __name__ == "__main__":
    if sys.argv[1] == "compile":
        compile_main(Path(sys.argv[2]))
    else:
        child_main(Path(sys.argv[1]), Path(sys.argv[2]))
