"""The sLSTM scan's hand-written backward equals autograd through the step loop: outputs, final state and every
gradient (inputs, R, b, initial h, c, n; gradients arriving at the final state too). tests/kernels/test_slstm_kernel.py
checks the default (fused) scan against the official vanilla cell as well."""

import pytest
import torch

from kernels.slstm import SLSTMState, initial_state, scan
from kernels.slstm.fused import scan_fused
from kernels.slstm.scan import scan_autograd


def inputs(B=3, S=13, NH=2, DH=5, *, dtype=torch.float64, seed=0, scale=1.0):
    generator = torch.Generator().manual_seed(seed)
    wx = scale * torch.randn(B, S, 4, NH, DH, generator=generator, dtype=dtype)
    R = 0.5 * torch.randn(4, NH, DH, DH, generator=generator, dtype=dtype)
    b = torch.randn(4, NH, DH, generator=generator, dtype=dtype)
    return [tensor.requires_grad_() for tensor in (wx, R, b)]


def given_state(B=3, NH=2, DH=5, *, dtype=torch.float64, seed=1) -> SLSTMState:
    generator = torch.Generator().manual_seed(seed)
    h, c = (torch.randn(B, NH, DH, generator=generator, dtype=dtype) for _ in range(2))
    n = torch.rand(B, NH, DH, generator=generator, dtype=dtype) + 0.5
    m = torch.randn(B, NH, DH, generator=generator, dtype=dtype)
    return SLSTMState(h.requires_grad_(), c.requires_grad_(), n.requires_grad_(), m)


def outputs_and_gradients(scan_function, wx, R, b, state, forget_gate, clip):
    """h, final state, and the gradients of a random linear loss of h and the final h, c, n w.r.t. all leaves."""
    h, final = scan_function(wx, R, b, state, forget_gate, clip)
    generator = torch.Generator().manual_seed(2)
    loss = (h * torch.randn(h.shape, generator=generator, dtype=h.dtype)).sum()
    for field in (final.h, final.c, final.n):
        loss = loss + (field * torch.randn(field.shape, generator=generator, dtype=h.dtype)).sum()
    leaves = [wx, R, b] + [tensor for tensor in state if tensor.requires_grad]
    return [h, *final], torch.autograd.grad(loss, leaves)


@pytest.mark.parametrize("forget_gate", ["sigmoid", "exp"])
@pytest.mark.parametrize("clip", [None, 0.05])
@pytest.mark.parametrize("start", ["default", "given"])
def test_fused_scan_equals_autograd_scan(forget_gate, clip, start):
    wx, R, b = inputs()
    state = initial_state(3, 2, 5, dtype=torch.float64, device=wx.device) if start == "default" else given_state()
    expected_outputs, expected_grads = outputs_and_gradients(scan_autograd, wx, R, b, state, forget_gate, clip)
    outputs, grads = outputs_and_gradients(scan_fused, wx, R, b, state, forget_gate, clip)
    for name, value, expected in zip(["h", "h_T", "c_T", "n_T", "m_T"], outputs, expected_outputs):
        torch.testing.assert_close(value, expected, rtol=1e-12, atol=1e-12, msg=name)
    for name, value, expected in zip(["wx", "R", "b", "h0", "c0", "n0"], grads, expected_grads):
        torch.testing.assert_close(value, expected, rtol=1e-10, atol=1e-12, msg=name)


def test_extreme_preactivations_agree():
    """Large gates exercise the stabiliser: m jumps between the input and the forget path."""
    wx, R, b = inputs(S=40, scale=15.0)
    state = initial_state(3, 2, 5, dtype=torch.float64, device=wx.device)
    expected_outputs, expected_grads = outputs_and_gradients(scan_autograd, wx, R, b, state, "sigmoid", None)
    outputs, grads = outputs_and_gradients(scan_fused, wx, R, b, state, "sigmoid", None)
    for value, expected in zip(outputs + list(grads), expected_outputs + list(expected_grads)):
        assert torch.isfinite(value).all()
        torch.testing.assert_close(value, expected, rtol=1e-9, atol=1e-10)


def test_float32_agrees_with_autograd_in_float32():
    wx, R, b = (tensor.detach().float().requires_grad_() for tensor in inputs(S=64))
    state = initial_state(3, 2, 5, dtype=torch.float32, device=wx.device)
    expected_outputs, expected_grads = outputs_and_gradients(scan_autograd, wx, R, b, state, "sigmoid", None)
    outputs, grads = outputs_and_gradients(scan_fused, wx, R, b, state, "sigmoid", None)
    torch.testing.assert_close(outputs[0], expected_outputs[0], rtol=1e-5, atol=1e-5)
    for value, expected in zip(grads, expected_grads):
        torch.testing.assert_close(value, expected, rtol=1e-4, atol=1e-4 * expected.abs().max().item())


def test_gradcheck_tiny():
    wx, R, b = inputs(B=2, S=4, NH=1, DH=2)
    state = given_state(B=2, NH=1, DH=2)

    def function(wx, R, b, h0, c0, n0):
        # h only: the final c and n carry the scale exp(-m) of the detached stabiliser, which finite differences see
        return scan_fused(wx, R, b, SLSTMState(h0, c0, n0, state.m), "sigmoid", None)[0]

    assert torch.autograd.gradcheck(function, (wx, R, b, state.h, state.c, state.n))


def graph_node_names(tensor: torch.Tensor) -> set[str]:
    names, stack, seen = set(), [tensor.grad_fn], set()
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        names.add(node.name())
        stack.extend(next_node for next_node, _ in node.next_functions)
    return names


def test_scan_runs_the_fused_node_off_cuda_and_autograd_under_autocast():
    wx, R, b = inputs()
    assert "FusedSLSTMScanBackward" in graph_node_names(scan(wx, R, b))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        names = graph_node_names(scan(*(tensor.float() for tensor in (wx, R, b))))
    assert "FusedSLSTMScanBackward" not in names and "BaddbmmBackward0" in names
