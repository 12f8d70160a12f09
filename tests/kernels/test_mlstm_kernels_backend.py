"""The ``mlstm_kernels`` backend: our adapter around NX-AI's kernels agrees with the torch reference.

On CPU the adapter runs the package's native torch kernels (only the kernel name differs from the GPU path);
the Triton kernels are checked by the CUDA-only test at the end.
"""

import warnings

import pytest
import torch
import torch.nn.functional as F

from kernels import backends
from kernels.mlstm import MLSTMState, chunkwise, recurrent
from kernels.mlstm import mlstm_kernels_backend as adapter

pytest.importorskip("mlstm_kernels")

CPU, CUDA = torch.device("cpu"), torch.device("cuda")
RTOL = {torch.float64: 1e-10, torch.float32: 1e-4}  # atol is rtol * max |expected|


def make_inputs(B=2, NH=2, S=37, DH=16, *, dtype=torch.float64, device=CPU, seed=0):
    """Random q, k, v (B, NH, S, DH) and gate pre-activations i, f (B, NH, S), all requiring grad."""
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(B, NH, S, DH, generator=g, dtype=dtype) for _ in range(3))
    i = torch.randn(B, NH, S, generator=g, dtype=dtype)
    f = 3.0 + torch.randn(B, NH, S, generator=g, dtype=dtype)
    return [x.to(device).requires_grad_() for x in (q, k, v, i, f)]


def make_state(B=2, NH=2, DH=16, *, dtype=torch.float64, device=CPU, seed=1) -> MLSTMState:
    """A random state (C, n requiring grad); head (0, 0) is empty (m = -inf)."""
    g = torch.Generator().manual_seed(seed)
    C = torch.randn(B, NH, DH, DH, generator=g, dtype=dtype)
    n = torch.randn(B, NH, DH, generator=g, dtype=dtype)
    m = torch.randn(B, NH, generator=g, dtype=dtype)
    m[0, 0] = float("-inf")
    return MLSTMState(C.to(device).requires_grad_(), n.to(device).requires_grad_(), m.to(device))


def true_state(state: MLSTMState) -> tuple[torch.Tensor, torch.Tensor]:
    """exp(m) (C, n): equal for equal states whatever their stabilisers."""
    scale = state.m.exp()  # (B, NH)
    return state.C * scale[..., None, None], state.n * scale[..., None]


def assert_close(actual, expected, rtol):
    scale = expected.abs().max().item()
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=rtol * scale)


def run_adapter(kernel, inputs, **options):
    defaults = dict(initial_state=None, return_state=False, forget_gate="sigmoid", eps=1e-6, chunk_size=16)
    return adapter.chunkwise_with_kernel(kernel, *inputs, **{**defaults, **options})


def gradients(h, wrt, loss=lambda h, g: (h * g).sum()):
    g = torch.randn(h.shape, generator=torch.Generator().manual_seed(7), dtype=h.dtype).to(h.device)
    return torch.autograd.grad(loss(h, g), wrt, retain_graph=True)


def headwise_normalized(h, g):
    """A loss that sees each (batch, head, step) vector of h only up to its scale, like the head-wise norm."""
    return (F.normalize(h, dim=-1) * g).sum()


# --- registry -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["mlstm.chunkwise", "mlstm.step"])
def test_auto_on_cpu_stays_torch(op):
    assert backends.resolve(op, "auto", CPU) is backends.resolve(op, "torch", CPU)


def test_auto_on_cuda_tries_the_triton_kernels_first_after_their_probe():
    pytest.importorskip("triton")
    for op, function in (("mlstm.chunkwise", adapter.chunkwise_triton), ("mlstm.step", adapter.step_triton)):
        (first, *_) = backends.available(op, CUDA)
        assert first.function is function and first.probed and first.packages == ("mlstm_kernels",)
        assert dict(first.workarounds[0]) == {"DISABLE_LLVM_OPT": "1"}
    assert adapter.chunkwise_triton.args == (adapter.TRITON_CHUNKWISE_KERNEL,)
    assert adapter.step_triton.args == (adapter.TRITON_STEP_KERNEL,)


def test_auto_on_cuda_without_the_package_skips_it(monkeypatch):
    monkeypatch.setattr(adapter, "_package_present", lambda: False)
    assert "mlstm_kernels" not in [backend.name for backend in backends.available("mlstm.chunkwise", CUDA)]
    with pytest.raises(RuntimeError, match="not available"):
        backends.resolve("mlstm.chunkwise", "mlstm_kernels", CUDA)


# --- chunkwise through the native kernels ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("S", [37, 64, 130])  # ragged (padded to 64), exact, and above TFLA's 128 (padded to 144)
@pytest.mark.parametrize("with_state", [False, True])
def test_chunkwise_matches_torch(dtype, S, with_state):
    """eps = 0: h does not depend on the stabiliser m, so both conventions give the same h and gradients."""
    inputs = make_inputs(S=S, dtype=dtype)
    state = make_state(dtype=dtype) if with_state else None
    wrt = inputs + ([state.C, state.n] if with_state else [])
    options = dict(initial_state=state, return_state=True, eps=0.0, chunk_size=16)
    h, last = chunkwise(*inputs, **options, backend="torch")
    h_adapter, last_adapter = run_adapter(adapter.NATIVE_CHUNKWISE_KERNEL, inputs, **options)
    rtol = RTOL[dtype]
    assert h_adapter.shape == h.shape and h_adapter.dtype == dtype
    assert_close(h_adapter, h, rtol)
    for actual, expected in zip(true_state(last_adapter), true_state(last)):
        assert_close(actual, expected, rtol)
    if with_state:  # where the start m is finite it is the same, and so is the stabiliser all the way
        finite = state.m.isfinite()  # (B, NH)
        assert_close(last_adapter.m[finite], last.m[finite], rtol)
    for actual, expected in zip(gradients(h_adapter, wrt), gradients(h, wrt)):
        assert_close(actual, expected, rtol)


def test_chunkwise_default_eps_differences_are_tiny():
    """With eps > 0 the empty state's m (theirs 0, ours -inf) and m's gradient (theirs kept, ours detached)
    change h and the gate gradients by about eps relative (measured over seeds: h <= 2e-8, i and f gradients
    <= 3e-6, relative to their largest entries)."""
    inputs = make_inputs(S=37)
    h = chunkwise(*inputs, eps=1e-6, chunk_size=16, backend="torch")
    h_adapter = run_adapter(adapter.NATIVE_CHUNKWISE_KERNEL, inputs, eps=1e-6)
    assert_close(h_adapter, h, 1e-7)
    for name, actual, expected in zip("qkvif", gradients(h_adapter, inputs), gradients(h, inputs)):
        assert_close(actual, expected, 2e-5 if name in "if" else 1e-7)


def test_custom_backward_is_exact_under_a_headwise_norm():
    """TFLA's backward (as native_custbw's) treats the normaliser as a constant: v's gradient is exact, and all
    gradients are exact for a loss that is blind to the scale of each h vector (the mLSTM layer's head-wise norm)."""
    inputs = make_inputs(S=37, dtype=torch.float32)
    state = make_state(dtype=torch.float32)
    options = dict(initial_state=state, eps=0.0)
    h = chunkwise(*inputs, **options, chunk_size=16, backend="torch")
    h_adapter = run_adapter("chunkwise--native_custbw", inputs, **options)
    wrt = inputs + [state.C]
    expected = gradients(h, wrt, headwise_normalized)
    for actual, exact in zip(gradients(h_adapter, wrt, headwise_normalized), expected):
        assert_close(actual, exact, 1e-4)
    v_grad = gradients(h_adapter, inputs[2])[0]
    assert_close(v_grad, gradients(h, inputs[2])[0], 1e-4)


# --- step through the native kernel ----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("with_state", [False, True])
def test_steps_match_recurrent(dtype, with_state):
    inputs = make_inputs(S=9, dtype=dtype)
    state = make_state(dtype=dtype) if with_state else None
    h, last = recurrent(*inputs, initial_state=state, return_state=True, eps=0.0, backend="torch")
    outputs, step_state = [], state
    for q, k, v, i, f in zip(*(x.split(1, dim=2) for x in inputs)):
        h_t, step_state = adapter.step_with_kernel(
            adapter.NATIVE_STEP_KERNEL, q, k, v, i, f, state=step_state, forget_gate="sigmoid", eps=0.0
        )
        outputs.append(h_t)  # (B, NH, 1, DH)
    rtol = RTOL[dtype]
    assert_close(torch.cat(outputs, dim=2), h, rtol)
    for actual, expected in zip(true_state(step_state), true_state(last)):
        assert_close(actual, expected, rtol)


def test_chunkwise_state_continues_in_steps():
    """A prefill's state (their convention, converted back) carries on in our torch steps."""
    inputs = make_inputs(S=21)
    prefix, rest = zip(*(x.split([20, 1], dim=2) for x in inputs))
    h_all = recurrent(*inputs, eps=0.0, backend="torch")
    _, state = run_adapter(adapter.NATIVE_CHUNKWISE_KERNEL, prefix, return_state=True, eps=0.0)
    h_last, _ = backends.resolve("mlstm.step", "torch", CPU)(*rest, state=state, forget_gate="sigmoid", eps=0.0)
    assert_close(h_last, h_all[:, :, -1:], RTOL[torch.float64])


# --- what the kernels cannot take -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kernel, dtype, options, reason",
    [
        (adapter.NATIVE_CHUNKWISE_KERNEL, torch.float64, dict(forget_gate="exp"), "forget_gate='exp'"),
        (adapter.NATIVE_CHUNKWISE_KERNEL, torch.float64, dict(chunk_size=24), "chunk_size=24"),
        (adapter.TRITON_CHUNKWISE_KERNEL, torch.float64, {}, "dtype torch.float64"),
    ],
)
def test_unsupported_inputs_run_on_torch_with_one_warning(monkeypatch, kernel, dtype, options, reason):
    monkeypatch.setattr(adapter, "_warned", set())
    inputs = make_inputs(S=10, dtype=dtype)
    expected = chunkwise(*inputs, **{"chunk_size": 16, **options}, backend="torch")
    with pytest.warns(RuntimeWarning, match=reason):
        h = run_adapter(kernel, inputs, **options)
    torch.testing.assert_close(h, expected, rtol=0, atol=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run_adapter(kernel, inputs, **options)


def test_triton_head_dims_are_checked():
    q = torch.zeros(1, 1, 1, 48)
    assert "head dim 48" in adapter._unsupported(adapter.TRITON_STEP_KERNEL, q, "sigmoid")
    for DH in (16, 32, 64, 128, 192, 384):
        assert adapter._unsupported(adapter.TRITON_STEP_KERNEL, q.new_zeros(1, 1, 1, DH), "sigmoid") is None


@pytest.mark.parametrize("chunk_size", [16, 32, 64, 128, 256])
def test_padded_lengths_fit_tfla(chunk_size):
    """TFLA takes S = 16, 32, 64 (one chunk) or a multiple of the chunk size from 128 on."""
    for S in range(1, 600):
        length = adapter._padded_length(S, chunk_size)
        assert length >= S and length % 16 == 0
        if length < 128:
            assert length & (length - 1) == 0
        else:
            assert length % min(chunk_size, length) == 0 and length - S < max(chunk_size, 64)


# --- the Triton kernels (GPU only) ----------------------------------------------------------------------------


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the Triton kernels need a CUDA device")
@pytest.mark.parametrize("S", [37, 128, 200])
@pytest.mark.parametrize("with_state", [False, True])
def test_triton_kernels_match_torch(S, with_state):
    """rtol 1e-2: Triton's float32 matmuls run in TF32."""
    pytest.importorskip("triton")
    inputs = make_inputs(S=S, DH=64, dtype=torch.float32, device=CUDA)
    state = make_state(DH=64, dtype=torch.float32, device=CUDA) if with_state else None
    options = dict(initial_state=state, return_state=True, chunk_size=64)
    assert backends.resolve("mlstm.chunkwise", "auto", CUDA) is adapter.chunkwise_triton
    h, last = chunkwise(*inputs, **options, backend="torch")
    h_triton, last_triton = chunkwise(*inputs, **options, backend="auto")
    assert_close(h_triton, h, 1e-2)
    for actual, expected in zip(true_state(last_triton), true_state(last)):
        assert_close(actual, expected, 1e-2)
    wrt = inputs + ([state.C] if with_state else [])
    for actual, expected in zip(gradients(h_triton, wrt, headwise_normalized), gradients(h, wrt, headwise_normalized)):
        assert_close(actual, expected, 1e-2)

    outputs, step_state = [], None if state is None else MLSTMState(*(x.detach() for x in state))
    assert backends.resolve("mlstm.step", "auto", CUDA) is adapter.step_triton
    for q, k, v, i, f in zip(*(x.detach().split(1, dim=2) for x in inputs)):
        h_t, step_state = adapter.step_triton(q, k, v, i, f, state=step_state, forget_gate="sigmoid", eps=1e-6)
        outputs.append(h_t)  # (B, NH, 1, DH)
    assert_close(torch.cat(outputs, dim=2), h.detach(), 1e-2)
    for actual, expected in zip(true_state(step_state), true_state(last)):
        assert_close(actual, expected.detach(), 1e-2)
