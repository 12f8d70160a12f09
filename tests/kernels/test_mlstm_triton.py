"""Our Triton mLSTM kernels (backend "triton" of "mlstm.chunkwise") give the values, final states and gradients
of the torch reference (backend "torch", and "torch_autograd" once).

On CPU the kernels run under Triton's interpreter. Triton (3.6 as 3.9) decides at decoration time: ``@triton.jit``
returns an interpreted function only if ``triton.knobs.runtime.interpret`` is true when the decorator runs (the
knob reads TRITON_INTERPRET from the environment at each access unless a value was set on it), and nothing
switches a decorated kernel later. Setting the variable or the knob in this process would therefore depend on
test order (our kernel modules may already have been imported, decorated for the GPU) and would leak into every
module decorated afterwards (fla's kernels, imported by other test modules). So the interpreted cases run in a
child process started with TRITON_INTERPRET=1 in its environment, before anything imports triton: one child
per pytest process (a module-scoped fixture; each pytest-xdist worker starts its own), which runs our backend on
the cases' inputs (made from seeds, on CPU) and saves the results; the tests here compute the references and
compare. The cases cover ragged S, S = 1, several chunks and several blocks of every head dim (small tilings),
an initial state with an empty head (m = -inf), both forget gates, float32 and bfloat16, strided inputs, a
sequence run in two halves, and the backward both keeping the forward's states and recomputing them. More cases
are marked slow.

Without a GPU, a slow test also compiles every kernel for sm_90 (Triton's own ptxas) and checks that none spills
registers. The tests marked gpu run the compiled kernels on CUDA at realistic shapes in this process.
"""

import dataclasses
import os
import re
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import pytest
import torch

from kernels import backends
from kernels.mlstm import MLSTMState, chunkwise
from kernels.mlstm.triton import adapter
from kernels.mlstm.triton.tiling import Tiling, choose_tiling, kernel_chunk

REPOSITORY = Path(__file__).resolve().parents[2]
CPU, CUDA = torch.device("cpu"), torch.device("cuda")
LEAVES = ["q", "k", "v", "i", "f", "C0", "n0"]
# several chunks, two row blocks per chunk, two blocks of a head dim of 48 (the second one ragged) everywhere
SMALL_TILES = Tiling(
    chunk=32, step_block=16, key_block=32, value_block=32, state_key_block=32, state_value_block=32, state_step_block=16
)


@dataclasses.dataclass(frozen=True)
class Case:
    S: int
    DH: int
    dtype: str = "float32"
    forget_gate: str = "sigmoid"
    with_state: bool = False
    chunk_size: int = 16
    tiling: Tiling | None = None
    save_states: bool | None = None  # False: the backward runs the recurrence across chunks again
    eps: float = 1e-6
    B: int = 1
    NH: int = 2
    seed: int = 0


CASES = {
    "float32, initial state, ragged S, DH 48, small tiles": Case(S=45, DH=48, with_state=True, tiling=SMALL_TILES),
    "bfloat16, exp forget gate, DH 16": Case(S=40, DH=16, dtype="bfloat16", forget_gate="exp", save_states=False),
    "float32, S = 1, initial state, DH 64": Case(S=1, DH=64, with_state=True, save_states=False),
}
SLOW_CASES = {
    "float32, DH 64, three chunks": Case(S=96, DH=64, chunk_size=32),
    "float32, exp forget gate, initial state, DH 16": Case(S=37, DH=16, forget_gate="exp", with_state=True, seed=1),
    "bfloat16, initial state, small tiles": Case(
        S=50, DH=48, dtype="bfloat16", with_state=True, tiling=SMALL_TILES, save_states=False
    ),
    "float16, DH 32": Case(S=33, DH=32, dtype="float16"),
    "float32, eps 0, large gates, B 2": Case(S=40, DH=16, eps=0.0, B=2, NH=1, seed=3),
    "float32, one chunk of 64": Case(S=64, DH=32, chunk_size=64, with_state=True),
}
STRIDED_CASE = "bfloat16, exp forget gate, DH 16"
AUTOGRAD_CASE = "float32, initial state, ragged S, DH 48, small tiles"
CONTINUATION_CASE = Case(S=37, DH=16, with_state=True)
RTOL = {"float32": 1e-4, "bfloat16": 3e-2, "float16": 5e-3}  # of the largest expected entry


# --- inputs --------------------------------------------------------------------------------------------------------


def make_inputs(case: Case, *, strided=False, device=CPU):
    """q, k, v (B, NH, S, DH), gates i, f (B, NH, S), the initial state or None, and upstream gradients of h, C, n.

    ``strided``: the same values as views of (B, S, NH, DH) and (B, S, NH) tensors, as the mLSTM layer makes them.
    Head (0, 0) of an initial state is empty (m = -inf).
    """
    g = torch.Generator().manual_seed(case.seed)
    B, NH, S, DH = case.B, case.NH, case.S, case.DH
    dtype = getattr(torch, case.dtype)
    q, k, v = (torch.randn(B, NH, S, DH, generator=g) for _ in range(3))
    gate_scale = 4.0 if case.seed == 3 else 1.0  # seed 3: gates far from 0 (large stabilisers)
    i = gate_scale * torch.randn(B, NH, S, generator=g)
    f = 3.0 + gate_scale * torch.randn(B, NH, S, generator=g)
    if case.forget_gate == "exp":
        f = -0.1 * f.abs()  # log forget gates below 0
    tensors = [x.to(dtype) for x in (q, k, v)] + [i.to(dtype), f.to(dtype)]
    if strided:
        tensors = [x.transpose(1, 2).contiguous().transpose(1, 2) for x in tensors]
    inputs = [x.to(device).requires_grad_() for x in tensors]
    state = None
    if case.with_state:
        C0, n0 = torch.randn(B, NH, DH, DH, generator=g), torch.randn(B, NH, DH, generator=g)
        m0 = torch.randn(B, NH, generator=g)
        m0[0, 0] = float("-inf")
        state = MLSTMState(C0.to(device).requires_grad_(), n0.to(device).requires_grad_(), m0.to(device))
    upstream = [
        torch.randn(B, NH, S, DH, generator=g),
        torch.randn(B, NH, DH, DH, generator=g),
        torch.randn(B, NH, DH, generator=g),
    ]
    return inputs, state, [x.to(device) for x in upstream]


def run(function, case: Case, inputs, state, upstream, **options):
    """h, the final C, n, m, and the gradients of <h, gh> + <C, gC> + <n, gn> w.r.t. q, k, v, i, f (and C0, n0)."""
    h, final = function(
        *inputs,
        initial_state=state,
        return_state=True,
        forget_gate=case.forget_gate,
        eps=case.eps,
        chunk_size=case.chunk_size,
        **options,
    )
    outputs = (h, final.C, final.n)
    loss = sum((x.to(g.dtype) * g).sum() for x, g in zip(outputs, upstream))
    leaves = inputs + ([state.C, state.n] if state is not None else [])
    return [h, *final], list(torch.autograd.grad(loss, leaves))


def triton_backend(case: Case):
    return lambda *args, **options: adapter.chunkwise_triton(
        *args, **options, tiling=case.tiling, save_states=case.save_states
    )


def reference(case: Case, backend="torch", device=CPU):
    """The reference's values and gradients on the case's inputs, in float32 (float64 for half-precision cases, on
    the rounded inputs: the error measured is the kernels')."""
    inputs, state, upstream = make_inputs(case, device=device)
    if case.dtype != "float32":
        inputs = [x.detach().double().requires_grad_() for x in inputs]
        if state is not None:
            state = MLSTMState(*(x.detach().double().requires_grad_() for x in state[:2]), state.m.double())
        upstream = [x.double() for x in upstream]
    return run(lambda *args, **options: chunkwise(*args, **options, backend=backend), case, inputs, state, upstream)


def assert_close(actual, expected, rtol, name):
    """Elementwise within rtol of the largest expected entry (a relative error for the tensor)."""
    expected = expected.detach().double()
    atol = rtol * expected.abs().max().item()
    torch.testing.assert_close(actual.detach().double(), expected, rtol=rtol, atol=atol, msg=lambda m: f"{name}: {m}")


def assert_agree(actual, expected, rtol):
    (values, gradients), (expected_values, expected_gradients) = actual, expected
    for name, x, y in zip(["h", "C", "n"], values, expected_values):
        assert_close(x, y, rtol, name)
    m, expected_m = values[3].double(), expected_values[3].double()
    assert torch.equal(m.isfinite(), expected_m.isfinite())
    torch.testing.assert_close(m[m.isfinite()], expected_m[m.isfinite()], rtol=1e-6, atol=1e-5)
    assert len(gradients) == len(expected_gradients)
    for name, x, y in zip(LEAVES, gradients, expected_gradients):
        assert x.dtype == y.dtype or y.dtype == torch.float64, f"grad {name} dtype {x.dtype}"
        assert_close(x, y, rtol, f"grad {name}")


# --- the interpreted child -----------------------------------------------------------------------------------------


def interpreted_results(jobs: list[tuple[str, str]], folder: Path) -> dict:
    """Run ``jobs`` ((kind, case name), kind 'contiguous', 'strided' or 'halves') in a child under the interpreter."""
    out = folder / "results.pt"
    environment = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(REPOSITORY)}
    command = [sys.executable, str(Path(__file__)), str(out), *(f"{kind}:{name}" for kind, name in jobs)]
    process = subprocess.run(command, cwd=REPOSITORY, env=environment, capture_output=True, text=True, timeout=900)
    if process.returncode != 0:
        pytest.fail(f"the interpreted child failed ({process.returncode}):\n{process.stderr[-4000:]}")
    return torch.load(out)


def _child(out: str, jobs: list[str]) -> None:
    """Entry of the interpreted child: our backend on each job's inputs, saved to ``out``."""
    results = {}
    for job in jobs:
        kind, name = job.split(":", 1)
        if kind == "halves":
            results[job] = _halves(CONTINUATION_CASE)
            continue
        case = {**CASES, **SLOW_CASES}[name]
        inputs, state, upstream = make_inputs(case, strided=kind == "strided")
        values, gradients = run(triton_backend(case), case, inputs, state, upstream)
        results[job] = ([x.detach() for x in values], gradients, [x.stride() for x in values[:1] + gradients[:5]])
    torch.save(results, out)


def _halves(case: Case):
    """h of the whole sequence and of its two halves run one after the other (the first's state starting the
    second), with both final states; forward only."""
    inputs, state, _ = make_inputs(case)
    options = dict(return_state=True, forget_gate=case.forget_gate, eps=case.eps, chunk_size=case.chunk_size)
    function = triton_backend(case)
    with torch.no_grad():
        whole, whole_state = function(*inputs, initial_state=state, **options)
        half = case.S // 2
        first, middle = function(*(x[:, :, :half] for x in inputs), initial_state=state, **options)
        second, last = function(*(x[:, :, half:] for x in inputs), initial_state=middle, **options)
    return whole, tuple(whole_state), torch.cat([first, second], 2), tuple(last)


@pytest.fixture(scope="module")
def interpreted(tmp_path_factory):
    jobs = [("contiguous", name) for name in CASES] + [("strided", STRIDED_CASE), ("halves", "")]
    return interpreted_results(jobs, tmp_path_factory.mktemp("interpreted"))


@pytest.fixture(scope="module")
def interpreted_slow(tmp_path_factory):
    return interpreted_results([("contiguous", name) for name in SLOW_CASES], tmp_path_factory.mktemp("slow"))


# --- interpreted cases ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", CASES)
def test_matches_torch(interpreted, name):
    case = CASES[name]
    values, gradients, _ = interpreted[f"contiguous:{name}"]
    assert values[0].dtype == getattr(torch, case.dtype) and values[0].shape == (case.B, case.NH, case.S, case.DH)
    assert all(x.dtype == torch.float32 for x in values[1:]), "the final state is float32"
    assert_agree((values, gradients), reference(case), RTOL[case.dtype])


def test_matches_torch_autograd(interpreted):
    """The autograd reference differentiates the normaliser and stops m's gradient as the hand-written one does."""
    values, gradients, _ = interpreted[f"contiguous:{AUTOGRAD_CASE}"]
    case = CASES[AUTOGRAD_CASE]
    assert_agree((values, gradients), reference(case, backend="torch_autograd"), RTOL[case.dtype])


def test_strided_inputs_give_the_same_results(interpreted):
    """Transposed (B, S, NH, DH) views run without a copy (h and the gradients keep their layout) and give the
    same numbers as contiguous inputs."""
    contiguous, strided = interpreted[f"contiguous:{STRIDED_CASE}"], interpreted[f"strided:{STRIDED_CASE}"]
    for x, y in zip(contiguous[0] + contiguous[1], strided[0] + strided[1]):
        assert torch.equal(x, y)
    (h_strides, *gradient_strides), (contiguous_h_strides, *_) = strided[2], contiguous[2]
    case = CASES[STRIDED_CASE]
    layout_strides = make_inputs(case, strided=True)[0][0].stride()
    assert h_strides == layout_strides != contiguous_h_strides
    assert gradient_strides[:3] == [layout_strides] * 3


def test_two_halves_equal_the_whole(interpreted):
    whole, whole_state, halves, halves_state = interpreted["halves:"]
    assert_close(halves, whole, 1e-5, "h")
    for name, x, y in zip("Cn", halves_state, whole_state):
        assert_close(x, y, 1e-5, name)
    assert torch.equal(halves_state[2].isfinite(), whole_state[2].isfinite())


@pytest.mark.slow
@pytest.mark.parametrize("name", SLOW_CASES)
def test_matches_torch_more_cases(interpreted_slow, name):
    case = SLOW_CASES[name]
    values, gradients, _ = interpreted_slow[f"contiguous:{name}"]
    assert_agree((values, gradients), reference(case), RTOL[case.dtype])


# --- without the interpreter: registry, fallbacks, tiling ------------------------------------------------------------


def test_registered_for_cuda_only():
    assert "triton" in backends.backends_of("mlstm.chunkwise")
    with pytest.raises(RuntimeError, match="not available"):
        backends.resolve("mlstm.chunkwise", "triton", CPU)
    registered = backends.backend("mlstm.chunkwise", "triton")
    assert registered.function is adapter.chunkwise_triton and registered.probed
    assert registered.is_available(CUDA) == adapter.triton_present()


def test_importing_the_suite_imports_no_triton():
    code = "import sys, kernels.mlstm; assert 'triton' not in sys.modules, 'triton imported'"
    environment = {**os.environ, "PYTHONPATH": str(REPOSITORY)}
    subprocess.run([sys.executable, "-c", code], cwd=REPOSITORY, check=True, env=environment)


@pytest.mark.parametrize(
    "dtype, DH, reason", [(torch.float64, 16, "dtype torch.float64"), (torch.float32, 520, "head dim 520")]
)
def test_unsupported_inputs_fall_back_to_torch_with_one_warning(monkeypatch, dtype, DH, reason):
    monkeypatch.setattr(adapter, "_warned", set())
    case = Case(S=5, DH=DH, dtype=str(dtype).removeprefix("torch."))
    inputs, _, _ = make_inputs(case)
    options = dict(initial_state=None, return_state=False, forget_gate="sigmoid", eps=1e-6, chunk_size=16)
    with pytest.warns(RuntimeWarning, match=reason):
        h = adapter.chunkwise_triton(*inputs, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        adapter.chunkwise_triton(*inputs, **options)  # the same reason warns once
    torch.testing.assert_close(h, chunkwise(*inputs, **options, backend="torch"))


@pytest.mark.parametrize(
    "chunk_size, S, expected",
    [(64, 4096, 64), (100, 4096, 64), (1000, 4096, 256), (1, 4096, 16), (128, 40, 64), (128, 1, 16)],
)
def test_kernel_chunk(chunk_size, S, expected):
    assert kernel_chunk(chunk_size, S) == expected


@pytest.mark.parametrize(
    "DH, dtype, saved",
    [
        (128, torch.bfloat16, True),
        (384, torch.bfloat16, True),
        (512, torch.bfloat16, False),
        (128, torch.float32, True),
        (512, torch.float32, True),
    ],
)
def test_states_are_kept_where_they_cost_at_most_twice_q_k_v(DH, dtype, saved):
    q = torch.empty(1, 1, 4096, DH, dtype=dtype)
    assert adapter.saves_states(q, q, choose_tiling(4096, DH, DH, 1, 128, CPU, dtype)) == saved


def test_tiling_fits_the_head_dims():
    tiling = choose_tiling(S=2048, DHK=384, DHV=384, heads=64, chunk_size=128, device=CPU)
    assert (tiling.chunk, tiling.step_block, tiling.key_block, tiling.value_block) == (128, 64, 64, 64)
    small = choose_tiling(S=45, DHK=24, DHV=24, heads=2, chunk_size=64, device=CPU)
    assert (small.chunk, small.key_block, small.value_block) == (64, 32, 32)
    wide = choose_tiling(S=2048, DHK=384, DHV=384, heads=64, chunk_size=128, device=CPU, dtype=torch.float32)
    assert (wide.step_block, wide.key_block, wide.value_block, wide.state_key_block) == (32, 32, 32, 32)
    with pytest.raises(ValueError, match="power of two"):
        Tiling(
            chunk=48,
            step_block=16,
            key_block=16,
            value_block=16,
            state_key_block=16,
            state_value_block=16,
            state_step_block=16,
        )


# --- compiled for the GPU, without one ------------------------------------------------------------------------------


def recorded_launches(monkeypatch, dtype: torch.dtype, DH: int, S: int = 256):
    """(kernel, arguments by name, launch options) of every launch of a forward and backward with an initial
    state, recorded instead of run: the kernels are compiled, not executed, so CPU tensors do."""
    triton = pytest.importorskip("triton")
    from kernels.mlstm.triton import function

    launches = []

    class Recorder:
        def __init__(self, kernel):
            self.kernel = kernel

        def __getitem__(self, grid):
            def launch(*args, **kwargs):
                arguments = dict(zip(self.kernel.arg_names, args)) | {
                    k: v for k, v in kwargs.items() if k in self.kernel.arg_names
                }
                options = {k: v for k, v in kwargs.items() if k not in self.kernel.arg_names}
                launches.append((self.kernel, arguments, options))

            return launch

    for name, kernel in vars(function).copy().items():
        if isinstance(kernel, triton.runtime.jit.JITFunction):
            monkeypatch.setattr(function, name, Recorder(kernel))
    B, NH = 1, 2
    q, k, v = (torch.zeros(B, NH, S, DH, dtype=dtype, requires_grad=True) for _ in range(3))
    i, f = (torch.zeros(B, NH, S, dtype=dtype, requires_grad=True) for _ in range(2))
    C0, n0 = torch.zeros(B, NH, DH, DH, requires_grad=True), torch.zeros(B, NH, DH, requires_grad=True)
    tiling = (
        choose_tiling(S, DH, DH, B * NH, 128, CUDA, dtype)
        if torch.cuda.is_available()
        else choose_tiling(S, DH, DH, B * NH, 128, CPU, dtype)
    )
    h, C, n, _ = function.ChunkwiseMLSTMTriton.apply(
        q, k, v, i, f, C0, n0, torch.zeros(B, NH), False, 1e-6, tiling, True
    )
    torch.autograd.grad(h.float().sum() + C.sum() + n.sum(), [q, k, v, i, f, C0, n0])
    return launches


def compile_for_sm90(kernel, arguments, options):
    """The kernel compiled for sm_90 (H100, H200) with these arguments, by Triton's own ptxas: no GPU needed."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    pointer_types = {torch.float32: "*fp32", torch.float16: "*fp16", torch.bfloat16: "*bf16"}

    def argument_type(value):
        if isinstance(value, torch.Tensor):
            return pointer_types[value.dtype]
        return {bool: "i1", int: "i32", float: "fp32"}[type(value)]

    constexprs = {p.name: arguments[p.name] for p in kernel.params if p.is_constexpr}
    signature = {
        name: "constexpr" if name in constexprs else argument_type(arguments[name]) for name in kernel.arg_names
    }
    return triton.compile(ASTSource(kernel, signature, constexprs), target=GPUTarget("cuda", 90, 32), options=options)


MAX_SPILLED_BYTES = 64


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:TRITON_DEFAULT_FP_FUSION is unset")  # Triton 3.9 on its coming default
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("DH", [128, 384])
def test_kernels_compile_for_sm90_without_spilling_registers(monkeypatch, dtype, DH):
    """Every kernel of a forward and backward compiles for sm_90 with the blocks the adapter chooses, and keeps
    its values in registers: a stack frame means spilled registers (slow); the backward recurrence over whole
    chunks of 128 steps spills 24 to 32 bytes at some head dims (Triton 3.6 and 3.9), a few registers, which we
    allow. Catches what the interpreter
    cannot: code the compiler rejects, and tiles too large for the registers."""
    import triton

    cuobjdump = triton.knobs.nvidia.cuobjdump.path
    launches = recorded_launches(monkeypatch, dtype, DH)
    assert len({kernel.fn.__name__ for kernel, _, _ in launches}) == 11
    for kernel, arguments, options in launches:
        cubin = Path(tempfile.mkdtemp()) / f"{kernel.fn.__name__}.cubin"
        cubin.write_bytes(compile_for_sm90(kernel, arguments, options).asm["cubin"])
        usage = subprocess.run([cuobjdump, "-res-usage", str(cubin)], capture_output=True, text=True, check=True).stdout
        stack = int(re.search(r"STACK:(\d+)", usage).group(1))
        assert stack <= MAX_SPILLED_BYTES, f"{kernel.fn.__name__} spills {stack} bytes of registers: {usage}"


# --- CUDA ------------------------------------------------------------------------------------------------------------

GPU_RTOL = {"float32": 2e-3, "bfloat16": 5e-2}


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
@pytest.mark.parametrize("DH", [128, 256, 384, 512])
@pytest.mark.parametrize("S, with_state", [(2048, False), (1000, True)])
def test_cuda_matches_torch(dtype, DH, S, with_state):
    pytest.importorskip("triton")
    case = Case(S=S, DH=DH, dtype=dtype, with_state=with_state, chunk_size=128)
    inputs, state, upstream = make_inputs(case, device=CUDA)
    actual = run(adapter.chunkwise_triton, case, inputs, state, upstream)
    assert_agree(actual, reference(case, device=CUDA), GPU_RTOL[dtype])


@pytest.mark.gpu
def test_cuda_strided_inputs_give_the_same_results():
    pytest.importorskip("triton")
    case = Case(S=1000, DH=128, dtype="bfloat16", with_state=True, chunk_size=128, B=2, NH=4)
    contiguous = run(adapter.chunkwise_triton, case, *make_inputs(case, device=CUDA)[0:3])
    strided = run(adapter.chunkwise_triton, case, *make_inputs(case, strided=True, device=CUDA)[0:3])
    for x, y in zip(contiguous[0] + contiguous[1], strided[0] + strided[1]):
        assert torch.equal(x, y)


if __name__ == "__main__":
    _child(sys.argv[1], sys.argv[2:])
