"""The tiled parallel mLSTM form: the same function as the untiled S x S formula and the official code,
forward and backward, with no S x S matrix in memory."""

import pytest
import torch

from benchmarks.memory import LiveTensorBytes
from kernels.mlstm import MLSTMState, parallel
from kernels.mlstm.parallel import DEFAULT_QUERY_BLOCK_SIZE, untiled_parallel
from kernels.mlstm.parallel_tiled import causal_decayed_sums

RTOL = 1e-9  # float64; atol is RTOL * max |expected|
GRAD_NAMES = ["q", "k", "v", "i", "f", "C0", "n0"]


def make_inputs(B=2, NH=3, S=37, DH=8, *, dtype=torch.float64, seed=0, i_std=3.0, f_mean=3.0, f_std=3.0):
    """q, k, v (B, NH, S, DH) and gate pre-activations i, f (B, NH, S), all requiring grad."""
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(B, NH, S, DH, generator=g, dtype=dtype) for _ in range(3))
    i = i_std * torch.randn(B, NH, S, generator=g, dtype=dtype)
    f = f_mean + f_std * torch.randn(B, NH, S, generator=g, dtype=dtype)
    return [x.requires_grad_() for x in (q, k, v, i, f)]


def make_state(B=2, NH=3, DH=8, *, m_mean=0.0, seed=1) -> MLSTMState:
    """Random C, n (requiring grad) and stabiliser m around ``m_mean``."""
    g = torch.Generator().manual_seed(seed)
    C = torch.randn(B, NH, DH, DH, generator=g, dtype=torch.float64).requires_grad_()
    n = torch.randn(B, NH, DH, generator=g, dtype=torch.float64).requires_grad_()
    return MLSTMState(C, n, m_mean + torch.randn(B, NH, generator=g, dtype=torch.float64))


def outputs_and_gradients(function, inputs, state=None, **options):
    """h, final state, and gradients of a fixed random projection of (h, C, n) w.r.t. inputs and C0, n0."""
    h, final = function(*inputs, initial_state=state, return_state=True, **options)
    g = torch.Generator().manual_seed(7)
    outputs = (h, final.C, final.n)
    loss = sum((x * torch.randn(x.shape, generator=g, dtype=x.dtype)).sum() for x in outputs)
    leaves = inputs + ([state.C, state.n] if state is not None else [])
    return h, final, torch.autograd.grad(loss, leaves)


def assert_close(actual, expected, name):
    atol = RTOL * expected.detach().abs().max().item()
    torch.testing.assert_close(actual, expected, rtol=RTOL, atol=atol, msg=lambda m: f"{name}: {m}")


# 1. the tiled form equals the untiled formula: h, final state, every gradient --------------------

GATES = {  # (forget gate, pre-activations); wide input gates move the row max m_t from column to column
    "sigmoid": ("sigmoid", dict(i_std=3.0, f_mean=3.0, f_std=3.0)),
    "exp": ("exp", dict(i_std=3.0, f_mean=-1.0, f_std=3.0)),
    "sigmoid-wide-i": ("sigmoid", dict(i_std=20.0, f_mean=0.0, f_std=5.0)),
}
STATES = {"no_state": None, "state": dict(m_mean=0.0), "dominant_state": dict(m_mean=30.0)}


@pytest.mark.parametrize("S, block_size", [(37, 8), (32, 8), (20, 64), (13, 1), (1, 4), (37, 37)])
@pytest.mark.parametrize("gates", list(GATES))
@pytest.mark.parametrize("state", list(STATES))
def test_tiled_equals_untiled(S, block_size, gates, state):
    forget_gate, gate_options = GATES[gates]
    inputs = make_inputs(S=S, **gate_options)
    initial = make_state(**STATES[state]) if STATES[state] is not None else None
    expected = outputs_and_gradients(untiled_parallel, inputs, initial, forget_gate=forget_gate)
    actual = outputs_and_gradients(parallel, inputs, initial, forget_gate=forget_gate, query_block_size=block_size)
    assert_close(actual[0], expected[0], "h")
    for name, x, y in zip("Cnm", actual[1], expected[1]):
        assert_close(x, y, f"final {name}")
    for name, x, y in zip(GRAD_NAMES, actual[2], expected[2]):
        assert_close(x, y, f"grad {name}")


def test_strided_inputs():
    """q, k, v as the mLSTM layer passes them: (B, S, NH, DH) transposed to (B, NH, S, DH)."""
    inputs = [x.detach() for x in make_inputs(S=29)]
    strided = [x.transpose(1, 2).contiguous().transpose(1, 2).requires_grad_() for x in inputs[:3]]
    gates = [x.clone().requires_grad_() for x in inputs[3:]]
    expected = outputs_and_gradients(untiled_parallel, [x.detach().requires_grad_() for x in inputs])
    actual = outputs_and_gradients(parallel, strided + gates, query_block_size=8)
    for name, x, y in zip(["h", "C", "n"], (actual[0], *actual[1][:2]), (expected[0], *expected[1][:2])):
        assert_close(x, y, name)
    for name, x, y in zip(GRAD_NAMES, actual[2], expected[2]):
        assert_close(x, y, f"grad {name}")


# 2. the official parallel form (no initial state, eps 1e-6) ----------------------------------------


@pytest.mark.parametrize("block_size", [1, 16, 64])
def test_matches_official_parallel(block_size):
    """Its stabiliser keeps its gradient, which only the eps term of the normaliser feels (see
    tests/kernels/test_mlstm_kernels.py), so gradients are compared at eps = 0."""
    from xlstm.blocks.mlstm.backends import parallel_stabilized_simple

    inputs = make_inputs(S=50, DH=16, i_std=3.0, f_mean=3.0, f_std=3.0)
    q, k, v, i, f = inputs
    expected = parallel_stabilized_simple(q, k, v, i[..., None], f[..., None], eps=1e-6)
    assert_close(parallel(*inputs, query_block_size=block_size), expected, "h")
    h = parallel(*inputs, query_block_size=block_size, eps=0.0)
    h_official = parallel_stabilized_simple(q, k, v, i[..., None], f[..., None], eps=0.0)
    weights = torch.randn(h.shape, generator=torch.Generator().manual_seed(3), dtype=h.dtype)
    grads = torch.autograd.grad((h * weights).sum(), inputs)
    grads_official = torch.autograd.grad((h_official * weights).sum(), inputs)
    for name, x, y in zip(GRAD_NAMES, grads, grads_official):
        assert_close(x, y, f"grad {name}")


# 3. gradcheck -----------------------------------------------------------------------------------


def test_gradcheck_causal_decayed_sums():
    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(2, 7, 3, generator=g, dtype=torch.float64).requires_grad_() for _ in range(3))
    r, gk = (torch.randn(2, 7, generator=g, dtype=torch.float64).requires_grad_() for _ in range(2))
    assert torch.autograd.gradcheck(lambda *x: causal_decayed_sums(*x, block_size=3), (q, k, v, r, gk), fast_mode=True)


def test_gradcheck_parallel():
    """h at eps = 0 does not depend on the stabiliser, so finite differences see the same function."""
    inputs = make_inputs(B=1, NH=2, S=7, DH=3)
    state = make_state(B=1, NH=2, DH=3)

    def h(q, k, v, i, f, C, n):
        return parallel(q, k, v, i, f, initial_state=MLSTMState(C, n, state.m), eps=0.0, query_block_size=3)

    assert torch.autograd.gradcheck(h, (*inputs, state.C, state.n), fast_mode=True)


# 4. memory: no S x S matrix, forward or backward ---------------------------------------------------


def training_memory(function, S, **options) -> LiveTensorBytes:
    """Live tensor bytes of one float32 forward and backward (saved tensors and gradients included)."""
    inputs = make_inputs(B=1, NH=1, S=S, DH=16, dtype=torch.float32)
    with LiveTensorBytes() as memory:
        h = function(*inputs, **options)
        h.sum().backward()
        del h
    return memory


def test_no_sequence_squared_matrix():
    S = 2048
    tiled, untiled = training_memory(parallel, S), training_memory(untiled_parallel, S)
    print(
        f"S={S}: tiled peak {tiled.peak / 2**20:.1f} MiB, largest {tiled.largest / 2**20:.2f} MiB; "
        f"untiled peak {untiled.peak / 2**20:.1f} MiB, largest {untiled.largest / 2**20:.1f} MiB"
    )
    assert untiled.largest >= S * S * 4  # the tracker sees the untiled S x S matrices
    assert tiled.largest <= DEFAULT_QUERY_BLOCK_SIZE * S * 4
    assert tiled.peak < untiled.peak / 8


# 5. bad block size ---------------------------------------------------------------------------------


@pytest.mark.parametrize("block_size", [0, -3, 2.0])
def test_bad_query_block_size(block_size):
    with pytest.raises(ValueError, match="query_block_size"):
        parallel(*make_inputs(S=4), query_block_size=block_size)
