"""Our Triton selective scan (backend ``"triton"`` of ``"selective_scan"``) equals the torch backend: y, the final
state and the gradients of x, dt, A, B, C, D and the initial state; ragged S, S = 1, with and without an initial
state and D, channel counts that are not multiples of the channel blocks, N 4, 8, 16 and 64, the loss through y, the
final state or both, float32 tight and bfloat16, float16 and autocast's mix (x, B, C bfloat16; dt, A, D float32)
loose, x, dt, B, C as strided views (slices of one tensor, as the mixer's ``torch.split``; x stored channel-major),
decays that underflow to zero, and the backward both reading the states the forward kept and recomputing them. The
reference is the torch backend in float64 on the same (rounded) inputs.

How the interpreter is switched on. ``@triton.jit`` decides when it decorates a kernel (Triton 3.6 as 3.9) whether
it runs interpreted (``TRITON_INTERPRET=1`` at that moment) or compiled, and setting the variable in the pytest
process would leak into every Triton kernel decorated afterwards (fla's). So the interpreted cases run in one child
process per module fixture, started with ``TRITON_INTERPRET=1`` before anything imports triton: the parent draws the
inputs, the child (``python -m tests.kernels.test_selective_scan_triton``) checks that the kernels are interpreted, runs our
backend forward and backward and returns outputs and gradients; the parent compares them with the torch backend.
The child also reports whether importing ``kernels`` imported triton (it must not) and runs the op's probe case
(``kernels.probe.run_probe``) on our backend.

Interpreter speed. Triton's interpreter runs ``tl.associative_scan`` one element at a time (``ScanOps.generic_scan``:
a Python call of the combine function per element, about 0.2 ms), which makes even tiny cases take minutes. The child
replaces it with the same loop over the scanned axis one slice at a time (the combine function called on numpy
arrays of a whole slice: the same float32 operations in the same order), after checking on a small case that both
give bit-identical results forward and backward.

A slow test compiles both kernels for sm_90a and sm_80 without a GPU (``triton.compile`` on a ``GPUTarget``) at the
tiles ``choose_tiling`` picks and checks that they fit the target's shared memory and spill no registers; the tests
marked gpu run the compiled kernels at Mamba's 125M layer (DI 1536, N 16, S 2048) against the torch backend.
"""

import dataclasses
import json
import os
import re
import subprocess
import sys
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from torch.nn.functional import softplus

from kernels.backends import _REGISTRY, resolve
from kernels.selective_scan import selective_scan
from kernels.selective_scan.triton.adapter import MAX_STATE_DIM

ROOT = Path(__file__).resolve().parents[2]
CPU, CUDA = torch.device("cpu"), torch.device("cuda")
CHILD_TIMEOUT_SECONDS = 900
# largest error against the float64 torch backend, relative to the largest |value| of each compared tensor
TOLERANCE = {"float32": 1e-5, "float16": 2e-3, "bfloat16": 1e-2, "mixed": 1e-2}
# per case dtype: the dtypes of x, dt, A, B, C, D and the initial state
DTYPES = {
    "float32": dict.fromkeys("x dt A B C D initial_state".split(), torch.float32),
    "bfloat16": dict.fromkeys("x dt A B C D initial_state".split(), torch.bfloat16),
    "float16": dict.fromkeys("x dt A B C D initial_state".split(), torch.float16),
    "mixed": dict(
        x=torch.bfloat16,
        dt=torch.float32,
        A=torch.float32,
        B=torch.bfloat16,
        C=torch.bfloat16,
        D=torch.float32,
        initial_state=torch.float32,
    ),  # as autocast and Mamba's parameters leave them
}
LEAVES = ("x", "dt", "A", "B", "C", "D", "initial_state")


@dataclass(frozen=True)
class Case:
    batch: int
    steps: int
    inner: int
    state: int
    dtype: str = "float32"
    initial_state: bool = False
    skip: bool = True  # D given
    strided: bool = False
    loss: str = "both"  # through "y", the final "state", or "both"
    tiling: tuple[int, int, int, int, int] | None = None  # Tiling's fields; None: choose_tiling's
    save_chunk_starts: bool | None = None  # None: the adapter's choice
    dt_scale: float = 1.0  # large: decays exp(dt A) underflow to zero
    seed: int = 0


SMALL_TILES = (8, 8, 4, 4, 4)  # chunks of 8 steps, channel blocks of 8 (forward) and 4 (backward), 4 warps
CASES = {
    "float32, initial state, ragged S, DI 10 in blocks of 8 and 4, N 4": Case(
        2, 13, 10, 4, initial_state=True, tiling=SMALL_TILES, save_chunk_starts=True
    ),
    "float32, S = 1, initial state, no D, N 16": Case(1, 1, 5, 16, initial_state=True, skip=False),
    "float32, strided inputs, chunk starts recomputed, N 16": Case(
        1, 21, 12, 16, strided=True, tiling=SMALL_TILES, save_chunk_starts=False, seed=1
    ),
    "float32, decays underflowing to zero, y only": Case(
        1, 13, 6, 4, loss="y", tiling=SMALL_TILES, dt_scale=400.0, seed=2
    ),
    "float32, the final state's gradient only, N 8": Case(1, 11, 9, 8, loss="state", tiling=SMALL_TILES, seed=3),
    "bfloat16, initial state, default tiles, N 16": Case(1, 27, 24, 16, "bfloat16", initial_state=True, seed=4),
    "autocast mix, y only, default tiles, N 16": Case(1, 20, 20, 16, "mixed", loss="y", seed=5),
}
SLOW_CASES = {
    "float16, initial state, N 16, several default chunks": Case(2, 70, 20, 16, "float16", initial_state=True, seed=6),
    "float32, N 8, 200 steps, default tiles": Case(2, 200, 40, 8, seed=7),
    "float32, N 64, initial state, chunk starts recomputed": Case(
        1, 30, 6, 64, initial_state=True, save_chunk_starts=False, seed=8
    ),
    "autocast mix, strided, initial state, default tiles": Case(
        2, 45, 36, 16, "mixed", initial_state=True, strided=True, seed=9
    ),
    "float32, chunks of 4 steps, ragged S, initial state": Case(
        2, 37, 10, 4, initial_state=True, tiling=(4, 8, 4, 4, 4), seed=10
    ),
}
PROBED_DTYPES, SLOW_PROBED_DTYPES = ("bfloat16",), ("float32",)
PATCH_CHECK_CASE = Case(1, 9, 5, 4, initial_state=True, tiling=(4, 8, 4, 4, 4), save_chunk_starts=False, seed=11)


def case_inputs(case: Case) -> dict[str, torch.Tensor]:
    """x, dt (positive), A (negative), B, C, D, the initial state, rounded to the case's dtypes; the loss weights."""
    generator = torch.Generator().manual_seed(case.seed)

    def normal(*shape):
        return torch.randn(*shape, generator=generator)

    batch, steps, inner, state = case.batch, case.steps, case.inner, case.state
    values = dict(
        x=normal(batch, steps, inner),
        dt=case.dt_scale * softplus(normal(batch, steps, inner) - 1.0),
        A=-torch.exp(0.5 * normal(inner, state)),
        B=normal(batch, steps, state),
        C=normal(batch, steps, state),
        D=normal(inner),
        initial_state=normal(batch, inner, state),
    )
    dtypes = DTYPES[case.dtype]
    inputs = {name: value.to(dtypes[name]) for name, value in values.items()}
    return inputs | dict(weight_y=normal(batch, steps, inner), weight_state=normal(batch, inner, state))


def leaf_names(case: Case) -> list[str]:
    return [name for name in LEAVES if (name != "D" or case.skip) and (name != "initial_state" or case.initial_state)]


def leaves_of(case: Case, inputs, dtype=None) -> dict[str, torch.Tensor]:
    """The case's differentiable inputs, detached leaves (cast to ``dtype`` if given)."""
    return {
        name: (inputs[name] if dtype is None else inputs[name].to(dtype)).detach().requires_grad_()
        for name in leaf_names(case)
    }


def outputs_and_gradients(scan_function, case: Case, leaves: dict[str, torch.Tensor], inputs):
    """y, the final state (if the loss uses it) and the gradients of the leaves of a random linear loss of both."""
    x, dt, B, C = (leaves[name] for name in ("x", "dt", "B", "C"))
    if case.strided:  # B, C slices of one (B, S, 2N + 3) tensor, as the mixer splits them; dt of a (B, S, DI + 3)
        B, C, _ = torch.cat([B, C, torch.zeros_like(B[..., :3])], dim=-1).split([case.state, case.state, 3], dim=-1)
        dt = torch.cat([dt, torch.zeros_like(dt[..., :3])], dim=-1)[..., : case.inner]
        x = x.transpose(1, 2).contiguous().transpose(1, 2)  # stored as (B, DI, S)
        assert not (dt.is_contiguous() or B.is_contiguous()) and x.stride(-1) == case.steps
    returns_state = case.loss != "y"
    result = scan_function(
        x,
        dt,
        leaves["A"],
        B,
        C,
        leaves.get("D"),
        initial_state=leaves.get("initial_state"),
        return_state=returns_state,
        chunk_size=8,
    )
    y, final_state = result if returns_state else (result, None)
    loss = torch.zeros((), dtype=torch.float64)
    if case.loss != "state":
        loss = loss + (y.double() * inputs["weight_y"].double()).sum()
    if returns_state:
        loss = loss + (final_state.double() * inputs["weight_state"].double()).sum()
    gradients = torch.autograd.grad(loss, list(leaves.values()), allow_unused=True)
    outputs = [y] + ([final_state] if returns_state else [])
    return [output.detach() for output in outputs], dict(zip(leaves, gradients))


def torch_reference(case: Case, inputs):
    """The torch backend in float64 on the same (rounded) inputs."""

    def torch_backend(*args, **kwargs):
        return selective_scan(*args, **kwargs, backend="torch")

    return outputs_and_gradients(torch_backend, case, leaves_of(case, inputs, torch.float64), inputs)


def assert_close_to_reference(name, value, reference, tolerance):
    assert value is not None, f"{name}: no gradient"
    assert value.shape == reference.shape, name
    assert torch.isfinite(value).all(), name
    error = (value.double() - reference).abs().max().item()
    scale = reference.abs().max().item()
    assert error <= tolerance * scale + 1e-12, f"{name}: max error {error:.3g} vs max |value| {scale:.3g}"


# --- the interpreter child ----------------------------------------------------------------------------------------


def run_interpreted(cases: dict[str, Case], probed_dtypes: tuple[str, ...], folder: Path) -> dict:
    """Run ``cases`` and the probe in ``probed_dtypes`` on the Triton backend in a child process under
    TRITON_INTERPRET=1; their results by name."""
    request, response = folder / "cases.pt", folder / "results.pt"
    torch.save(
        dict(
            probed_dtypes=probed_dtypes,
            cases={name: (dataclasses.asdict(case), case_inputs(case)) for name, case in cases.items()},
        ),
        request,
    )
    environment = {**os.environ, "TRITON_INTERPRET": "1"}
    child = subprocess.run(
        [sys.executable, "-m", "tests.kernels.test_selective_scan_triton", str(request), str(response)],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT_SECONDS,
    )
    assert child.returncode == 0, f"interpreter child failed:\n{child.stdout[-3000:]}\n{child.stderr[-6000:]}"
    return torch.load(response)


def scan_slice_by_slice(self, input):
    """Triton's ``ScanOps.generic_scan`` one slice of the scanned axis at a time: ``combine(accumulated, current)``
    along the axis (already flipped for a reverse scan), on numpy arrays of whole slices."""
    import numpy as np

    data = [np.moveaxis(argument.handle.data, self.axis, 0) for argument in input]
    outputs = [np.empty_like(values) for values in data]
    accumulated = None
    for index in range(data[0].shape[0]):
        current = tuple(self.to_tensor(values[index], argument.dtype) for values, argument in zip(data, input))
        if accumulated is not None:
            combined = self.combine_fn.fn(*accumulated, *current)
            current = combined if isinstance(combined, tuple) else (combined,)
        accumulated = current
        for output, value in zip(outputs, accumulated):
            output[index] = value.handle.data.reshape(output[index].shape)
    return [
        self.to_tensor(np.ascontiguousarray(np.moveaxis(output, 0, self.axis)), argument.dtype)
        for output, argument in zip(outputs, input)
    ]


def run_case(case: Case, inputs):
    """In the child: the case on our backend (warnings are errors: a fallback to torch would warn)."""
    from kernels.selective_scan.triton import adapter
    from kernels.selective_scan.triton.function import Tiling

    def triton_backend(*args, **kwargs):
        return adapter.selective_scan_triton(
            *args,
            **kwargs,
            save_chunk_starts=case.save_chunk_starts,
            tiling=Tiling(*case.tiling) if case.tiling else None,
        )

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        outputs, gradients = outputs_and_gradients(triton_backend, case, leaves_of(case, inputs), inputs)
    return dict(outputs=outputs, gradients=gradients)


def child_main(request: Path, response: Path) -> None:
    """In the child: every case of ``request`` on the Triton backend; outputs, gradients and checks saved."""
    import kernels.selective_scan  # noqa: F401  (registers every backend: none may import triton)

    triton_imported_by_kernels = "triton" in sys.modules
    from triton.runtime import interpreter

    from kernels.probe import run_probe
    from kernels.selective_scan.triton import backward, forward

    results = {
        "triton_imported_by_kernels": triton_imported_by_kernels,
        "interpreted": all(
            isinstance(kernel, interpreter.InterpretedFunction)
            for kernel in (forward._forward_kernel, backward._backward_kernel)
        ),
    }
    check_inputs = case_inputs(PATCH_CHECK_CASE)
    elementwise = run_case(PATCH_CHECK_CASE, check_inputs)
    interpreter.ScanOps.generic_scan = scan_slice_by_slice
    slice_by_slice = run_case(PATCH_CHECK_CASE, check_inputs)
    results["slice_by_slice_scan_is_exact"] = all(
        torch.equal(a, b)
        for a, b in zip(
            elementwise["outputs"] + list(elementwise["gradients"].values()),
            slice_by_slice["outputs"] + list(slice_by_slice["gradients"].values()),
        )
    )
    job = torch.load(request)
    for dtype in job["probed_dtypes"]:
        probe_request = dict(
            op="selective_scan",
            backend="triton",
            device="cpu",
            dtype=dtype,
            shape_class={"state_dim": 16},
            modules=["kernels.selective_scan.triton"],
        )
        results[f"probe {dtype}"] = run_probe(probe_request)
    for name, (fields, inputs) in job["cases"].items():
        case = Case(**{**fields, "tiling": tuple(fields["tiling"]) if fields["tiling"] else None})
        results[name] = run_case(case, inputs)
    torch.save(results, response)


@pytest.fixture(scope="module")
def interpreted(tmp_path_factory):
    return run_interpreted(CASES, PROBED_DTYPES, tmp_path_factory.mktemp("selective_scan_triton"))


@pytest.fixture(scope="module")
def interpreted_slow(tmp_path_factory):
    return run_interpreted(SLOW_CASES, SLOW_PROBED_DTYPES, tmp_path_factory.mktemp("selective_scan_triton_slow"))


def check_case(case: Case, result: dict) -> None:
    inputs = case_inputs(case)
    expected_outputs, expected_gradients = torch_reference(case, inputs)
    dtypes = DTYPES[case.dtype]
    tolerance = TOLERANCE[case.dtype]
    assert all(output.dtype == dtypes["x"] for output in result["outputs"])  # y and the final state in x's dtype
    for name, value, expected in zip(("y", "final state"), result["outputs"], expected_outputs):
        assert_close_to_reference(name, value, expected, tolerance)
    assert list(result["gradients"]) == list(expected_gradients)
    for name, expected in expected_gradients.items():
        value = result["gradients"][name]
        assert value is not None and value.dtype == dtypes[name], f"gradient of {name}: {value}"
        assert_close_to_reference(f"gradient of {name}", value, expected, tolerance)


def test_the_child_ran_interpreted_kernels_with_an_exact_faster_scan(interpreted):
    assert interpreted["interpreted"], "the child ran compiled kernels: TRITON_INTERPRET was not read"
    assert interpreted["slice_by_slice_scan_is_exact"]


@pytest.mark.parametrize("name", list(CASES))
def test_triton_scan_equals_torch_backend(name, interpreted):
    check_case(CASES[name], interpreted[name])


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SLOW_CASES))
def test_triton_scan_equals_torch_backend_longer(name, interpreted_slow):
    check_case(SLOW_CASES[name], interpreted_slow[name])


def test_importing_the_kernels_does_not_import_triton(interpreted):
    assert not interpreted["triton_imported_by_kernels"]


@pytest.mark.parametrize("dtype", PROBED_DTYPES)
def test_triton_scan_passes_the_kernel_probe(dtype, interpreted):
    assert interpreted[f"probe {dtype}"] == (True, "")


@pytest.mark.slow
@pytest.mark.parametrize("dtype", SLOW_PROBED_DTYPES)
def test_triton_scan_passes_the_kernel_probe_in_more_dtypes(dtype, interpreted_slow):
    assert interpreted_slow[f"probe {dtype}"] == (True, "")


# --- registration and fallback (no kernel runs) -------------------------------------------------------------------


def test_registered_between_mamba_ssm_and_torch_only_for_cuda_behind_the_probe():
    import importlib.util

    from kernels.selective_scan.triton import selective_scan_triton

    backends = _REGISTRY["selective_scan"]
    assert backends["mamba_ssm"].priority > backends["triton"].priority > backends["torch"].priority
    assert backends["triton"].probed and backends["triton"].function is selective_scan_triton
    assert not backends["triton"].is_available(CPU)
    assert backends["triton"].is_available(CUDA) == (importlib.util.find_spec("triton") is not None)
    with pytest.raises(RuntimeError, match="not available on device cpu"):
        resolve("selective_scan", "triton", CPU)


FALLBACKS = {
    "float64": (Case(2, 5, 3, 4, initial_state=True), torch.float64, r"x in torch.float64 .*using the torch backend"),
    "N above the limit": (
        Case(1, 3, 2, MAX_STATE_DIM + 1),
        None,
        rf"state dim N = {MAX_STATE_DIM + 1} .*using the torch backend",
    ),
}


@pytest.mark.parametrize("reason", list(FALLBACKS))
def test_inputs_the_kernels_cannot_take_run_on_the_torch_backend_with_one_warning(reason, monkeypatch):
    from kernels.selective_scan.triton import adapter

    monkeypatch.setattr(adapter, "_warned", set())
    case, dtype, message = FALLBACKS[reason]
    inputs = case_inputs(case)
    expected = torch_reference(case, inputs) if dtype == torch.float64 else None
    with pytest.warns(RuntimeWarning, match=message):
        outputs, gradients = outputs_and_gradients(
            adapter.selective_scan_triton, case, leaves_of(case, inputs, dtype), inputs
        )
    reference_outputs, reference_gradients = expected or outputs_and_gradients(
        lambda *args, **kwargs: selective_scan(*args, **kwargs, backend="torch"), case, leaves_of(case, inputs), inputs
    )
    for value, reference in zip(
        outputs + list(gradients.values()), reference_outputs + list(reference_gradients.values())
    ):
        torch.testing.assert_close(value, reference, rtol=0, atol=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same reason warns once
        outputs_and_gradients(adapter.selective_scan_triton, case, leaves_of(case, inputs, dtype), inputs)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message given without a CUDA device")
def test_the_gpu_benchmark_imports_without_cuda_and_says_it_needs_one():
    from benchmarks import gpu_selective_scan

    with pytest.raises(RuntimeError, match=r"needs a CUDA device"):
        gpu_selective_scan.selective_scan_grid(repeats=1)


# --- compiled without a GPU ---------------------------------------------------------------------------------------

# target -> (compute capability, shared memory a block may use in bytes)
COMPILE_TARGETS = {"sm_90a (H100, H200)": (90, 232448), "sm_80 (A100)": (80, 167936)}
INPUT_POINTERS = {"x", "dt", "B", "C", "y", "grad_y", "grad_x", "grad_dt"}  # in the input dtype; the others float32
UNIT_STRIDES = {"stride_x_dim", "stride_dt_dim", "stride_b_state", "stride_c_state", "stride_gy_dim"}  # contiguous
SIZES = {"seq_len", "inner_dim", "state_dim", "batch_size"}
COMPILED_STATE_DIMS = (16, 4, 8, 32, 64)


def compile_main(response: Path) -> None:
    """In the child: compile both kernels (every optional part on) per target, input dtype and state dim at the
    tiles ``choose_tiling`` picks, with the alignment a launch on contiguous (B, S, DI) tensors specialises on; save
    each one's shared memory and spilled bytes (the stack frame ``cuobjdump -res-usage`` reports)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from kernels.selective_scan.triton import backward, forward, function

    usage = {}
    for target_name, (capability, _) in COMPILE_TARGETS.items():
        for dtype_name in ("bf16", "fp32"):
            for state_dim in COMPILED_STATE_DIMS if (capability, dtype_name) == (90, "bf16") else (16,):
                tiling = function.choose_tiling(state_dim)
                common = dict(
                    CHUNK=tiling.chunk, BLOCK_N=triton.next_power_of_2(state_dim), HAS_D=True, HAS_INITIAL_STATE=True
                )
                kernels = {
                    "forward": (
                        forward._forward_kernel,
                        dict(STORE_Y=True, STORE_CHUNK_STARTS=True, BLOCK_D=tiling.forward_block_d),
                        dict(num_warps=tiling.forward_warps),
                    ),
                    "backward": (
                        backward._backward_kernel,
                        dict(HAS_GRAD_FINAL_STATE=True, BLOCK_D=tiling.backward_block_d),
                        dict(num_warps=tiling.backward_warps),
                    ),
                }
                for kernel_name, (kernel, options, launch_options) in kernels.items():
                    constants = common | options | {name: 1 for name in UNIT_STRIDES if name in kernel.arg_names}
                    signature = {}
                    for name in kernel.arg_names:
                        if name in constants:
                            signature[name] = "constexpr"
                        elif name.startswith("stride_") or name in SIZES:
                            signature[name] = "i32"
                        else:
                            signature[name] = f"*{dtype_name}" if name in INPUT_POINTERS else "*fp32"
                    aligned = {
                        (index,): [["tt.divisibility", 16]]
                        for index, name in enumerate(kernel.arg_names)
                        if signature[name] != "constexpr"
                        and not name.endswith(("_dim", "_state"))
                        and name != "state_dim"
                    }
                    compiled = triton.compile(
                        ASTSource(kernel, signature, constants, aligned),
                        target=GPUTarget("cuda", capability, 32),
                        options=launch_options,
                    )
                    cubin = Path(tempfile.mkdtemp()) / f"{kernel_name}.cubin"
                    cubin.write_bytes(compiled.asm["cubin"])
                    resources = subprocess.run(
                        [triton.knobs.nvidia.cuobjdump.path, "-res-usage", str(cubin)],
                        capture_output=True,
                        text=True,
                        check=True,
                    ).stdout
                    usage[f"{target_name} {dtype_name} N {state_dim} {kernel_name}"] = dict(
                        shared=compiled.metadata.shared,
                        spilled=int(re.search(r"STACK:(\d+)", resources).group(1)),
                        registers=int(re.search(r"REG:(\d+)", resources).group(1)),
                    )
    response.write_text(json.dumps(usage))


@pytest.mark.slow
def test_the_kernels_compile_for_hopper_and_ampere_within_shared_memory_without_spilling(tmp_path):
    response = tmp_path / "usage.json"
    environment = {name: value for name, value in os.environ.items() if name != "TRITON_INTERPRET"}
    environment.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Triton 3.9 warns unless set; 1 is the default
    child = subprocess.run(
        [sys.executable, "-m", "tests.kernels.test_selective_scan_triton", "compile", str(response)],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT_SECONDS,
    )
    assert child.returncode == 0, f"compile child failed:\n{child.stderr[-6000:]}"
    usage = json.loads(response.read_text())
    assert len(usage) == 2 * (len(COMPILED_STATE_DIMS) + 3)
    for key, used in usage.items():
        limit = next(limit for name, (_, limit) in COMPILE_TARGETS.items() if key.startswith(name))
        assert used["shared"] <= limit, f"{key}: {used['shared']} bytes of shared memory, the target has {limit}"
        assert used["spilled"] == 0, f"{key} spills {used['spilled']} bytes of registers ({used})"


# --- on a GPU: the compiled kernels at Mamba 125M's layer ---------------------------------------------------------

GPU_BATCH, GPU_STEPS, GPU_INNER, GPU_STATE = 2, 2048, 1536, 16
# precision -> (input dtype, error allowed whatever the torch backend's, multiple of the torch backend's error)
GPU_PRECISIONS = {"float32": (torch.float32, 1e-4, 4.0), "bfloat16": (torch.bfloat16, 1e-2, 2.0)}


def gpu_run(backend: str, case: Case, inputs, dtype):
    leaves = leaves_of(case, {name: value.to(CUDA) for name, value in inputs.items()}, dtype)

    def scan(*args, **kwargs):
        return selective_scan(*args, **kwargs, backend=backend)

    cuda_inputs = {name: value.to(CUDA) for name, value in inputs.items()}
    outputs, gradients = outputs_and_gradients(scan, case, leaves, cuda_inputs)
    return outputs + list(gradients.values())


def relative_errors(values, references) -> list[float]:
    return [
        ((value.double() - reference.double()).abs().max() / reference.double().abs().max()).item()
        for value, reference in zip(values, references)
    ]


@pytest.mark.gpu
@pytest.mark.parametrize("precision", list(GPU_PRECISIONS))
@pytest.mark.parametrize("initial_state", [False, True])
def test_gpu_triton_scan_is_as_accurate_as_the_torch_backend(precision, initial_state):
    """y, the final state and every gradient against the torch backend in float64 on the same inputs: within an
    absolute bound, or within a multiple of the torch backend's own error in the same precision."""
    dtype, bound, multiple = GPU_PRECISIONS[precision]
    case = Case(GPU_BATCH, GPU_STEPS, GPU_INNER, GPU_STATE, initial_state=initial_state, seed=11)
    inputs = {
        name: value.to(dtype) if name not in ("weight_y", "weight_state") else value
        for name, value in case_inputs(case).items()
    }
    reference = gpu_run("torch", case, inputs, torch.float64)
    ours = relative_errors(gpu_run("triton", case, inputs, None), reference)
    peer = relative_errors(gpu_run("torch", case, inputs, None), reference)
    names = ["y", "final state", *leaf_names(case)]
    for name, error, peer_error in zip(names, ours, peer):
        assert error <= max(bound, multiple * peer_error), f"{name}: ours {error:.3g}, torch backend {peer_error:.3g}"


if __name__ == "__main__":
    if sys.argv[1] == "compile":
        compile_main(Path(sys.argv[2]))
    else:
        child_main(Path(sys.argv[1]), Path(sys.argv[2]))
