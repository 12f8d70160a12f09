"""sLSTM scan against things we did not write: the official vanilla cell, the unstabilised formula, autograd."""

import pytest
import torch
from xlstm.blocks.slstm.cell import sLSTMCell, sLSTMCellConfig

from kernels.backends import backends_of
from kernels.slstm import SLSTMState, initial_state, scan

B, S, NH, DH = 3, 12, 2, 4


def random_inputs(dtype=torch.float64, seed=0, batch=B, seq_len=S, input_scale=1.0, recurrent_scale=0.5):
    """wx (B, S, 4, NH, DH), R (4, NH, DH, DH), b (4, NH, DH), all leaves requiring grad."""
    generator = torch.Generator().manual_seed(seed)
    wx = input_scale * torch.randn(batch, seq_len, 4, NH, DH, generator=generator, dtype=dtype)
    R = recurrent_scale * torch.randn(4, NH, DH, DH, generator=generator, dtype=dtype)
    b = torch.randn(4, NH, DH, generator=generator, dtype=dtype)
    return tuple(tensor.requires_grad_() for tensor in (wx, R, b))


def official_cell(R: torch.Tensor, b: torch.Tensor) -> torch.nn.Module:
    """The official vanilla sLSTM cell holding our R and b, in their dtype."""
    config = sLSTMCellConfig(hidden_size=NH * DH, num_heads=NH, backend="vanilla", dtype="float32")
    cell = sLSTMCell(config).to(R.dtype)
    cell.recurrent_kernel[...] = R.detach().permute(1, 2, 0, 3)  # external layout (NH, DH_in, 4, DH_out)
    cell.bias[...] = b.detach().permute(1, 0, 2)  # external layout (NH, 4, DH)
    return cell


def run_official(cell, wx, state=None):
    """Official cell on wx (B, S, 4, NH, DH): h (B, S, NH, DH) and final state (4, B, NH * DH) = (h, c, n, m)."""
    output, final_state = cell(wx.reshape(wx.shape[0], wx.shape[1], -1), state)  # input layout BSGNH
    return output.permute(0, 2, 1, 3), final_state  # output layout BNSH -> (B, S, NH, DH)


def official_grads(cell):
    """Gradients of the official cell's parameters in our layout: R (4, NH, DH, DH), b (4, NH, DH)."""
    grad_R = cell._recurrent_kernel_int2ext(cell._recurrent_kernel_.grad).permute(2, 0, 1, 3)
    grad_b = cell._bias_int2ext(cell._bias_.grad).permute(1, 0, 2)
    return grad_R, grad_b


def max_deviation(a, b):
    return (a - b).abs().max().item()


# --- 1. oracle: the official vanilla cell -------------------------------------------------------


@pytest.mark.parametrize("dtype, tol_out, tol_grad", [(torch.float64, 1e-10, 1e-10), (torch.float32, 1e-5, 1e-4)])
def test_matches_official_cell_outputs_state_and_gradients(dtype, tol_out, tol_grad):
    wx, R, b = random_inputs(dtype)
    loss_weights = torch.randn(B, S, NH, DH, dtype=dtype, generator=torch.Generator().manual_seed(1))
    cell = official_cell(R, b)

    h, state = scan(wx, R, b, return_state=True)
    (h * loss_weights).sum().backward()
    wx_official = wx.detach().clone().requires_grad_()
    h_official, state_official = run_official(cell, wx_official)
    (h_official * loss_weights).sum().backward()

    assert h.dtype == dtype
    assert max_deviation(h, h_official) < tol_out
    for ours, theirs in zip(state, state_official):
        assert max_deviation(ours.reshape(B, -1), theirs) < tol_out
    grad_R_official, grad_b_official = official_grads(cell)
    assert max_deviation(wx.grad, wx_official.grad) < tol_grad
    assert max_deviation(R.grad, grad_R_official) < tol_grad
    assert max_deviation(b.grad, grad_b_official) < tol_grad


def test_continuation_matches_official_cell_from_same_state():
    wx, R, b = random_inputs()
    half = S // 2
    _, state = scan(wx[:, :half], R, b, return_state=True)
    h_second = scan(wx[:, half:], R, b, initial_state=state)
    official_state = torch.stack([field.reshape(B, -1) for field in state]).detach()  # (4, B, NH * DH)
    h_official, _ = run_official(official_cell(R, b), wx[:, half:].detach(), official_state)
    assert max_deviation(h_second, h_official) < 1e-10


# --- 2. the unstabilised formula ----------------------------------------------------------------


def unstabilised_scan(wx, R, b, forget_gate):
    """Plain exponential gates without stabiliser, written directly from the paper; h (B, S, NH, DH)."""
    h = c = n = torch.zeros(wx.shape[0], NH, DH, dtype=wx.dtype)  # (B, NH, DH)
    outputs = []
    for t in range(wx.shape[1]):
        pre = wx[:, t] + torch.einsum("bhd,ghde->bghe", h, R) + b  # (B, 4, NH, DH)
        i = torch.exp(pre[:, 0])
        f = torch.sigmoid(pre[:, 1]) if forget_gate == "sigmoid" else torch.exp(pre[:, 1])
        z = torch.tanh(pre[:, 2])
        o = torch.sigmoid(pre[:, 3])
        c = f * c + i * z
        n = f * n + i
        h = o * c / n
        outputs.append(h)
    return torch.stack(outputs, dim=1)


@pytest.mark.parametrize("forget_gate", ["sigmoid", "exp"])
def test_stabiliser_changes_neither_outputs_nor_gradients(forget_gate):
    wx, R, b = random_inputs(input_scale=2.0)
    loss_weights = torch.randn(B, S, NH, DH, dtype=wx.dtype, generator=torch.Generator().manual_seed(2))
    h = scan(wx, R, b, forget_gate=forget_gate)
    grads = torch.autograd.grad((h * loss_weights).sum(), (wx, R, b))
    h_plain = unstabilised_scan(wx, R, b, forget_gate)
    grads_plain = torch.autograd.grad((h_plain * loss_weights).sum(), (wx, R, b))
    assert max_deviation(h, h_plain) < 1e-12
    for ours, plain in zip(grads, grads_plain):
        assert max_deviation(ours, plain) < 1e-10


# --- 3. continuation and initial state ----------------------------------------------------------


def test_scanning_in_two_halves_equals_scanning_whole_sequence():
    wx, R, b = random_inputs()
    h_whole, state_whole = scan(wx, R, b, return_state=True)
    h_first, state_first = scan(wx[:, :5], R, b, return_state=True)
    h_second, state_second = scan(wx[:, 5:], R, b, initial_state=state_first, return_state=True)
    assert torch.allclose(torch.cat([h_first, h_second], dim=1), h_whole, rtol=0, atol=1e-14)
    for whole, halves in zip(state_whole, state_second):
        assert torch.allclose(whole, halves, rtol=0, atol=1e-12)


def test_explicit_zero_state_equals_default_state():
    wx, R, b = random_inputs()
    zeros = torch.zeros(B, NH, DH, dtype=wx.dtype)
    h_default, state_default = scan(wx, R, b, return_state=True)
    default_state = initial_state(B, NH, DH, dtype=wx.dtype, device=wx.device)
    assert all(field.shape == (B, NH, DH) for field in default_state)
    assert torch.equal(scan(wx, R, b, initial_state=default_state), h_default)
    for m in (zeros, zeros + 7.0):  # with n == 0 the stabiliser is ignored
        h, state = scan(wx, R, b, initial_state=SLSTMState(zeros, zeros, zeros, m), return_state=True)
        assert torch.equal(h, h_default)
        assert all(torch.equal(x, y) for x, y in zip(state, state_default))


def test_gradients_reach_initial_state_and_are_finite_from_default_state():
    wx, R, b = random_inputs()
    state = SLSTMState(*(torch.rand(B, NH, DH, dtype=wx.dtype).requires_grad_() for _ in range(4)))
    scan(wx, R, b, initial_state=state).sum().backward()
    assert all(field.grad is not None and field.grad.abs().sum() > 0 for field in state[:3])
    assert state.m.grad is None  # the stabiliser carries no gradient
    wx.grad = None
    scan(wx, R, b).sum().backward()
    assert torch.isfinite(wx.grad).all() and torch.isfinite(R.grad).all() and torch.isfinite(b.grad).all()


# --- 4. recurrent gradient clipping -------------------------------------------------------------


def test_clip_larger_than_any_gradient_equals_no_clip_and_small_clip_changes_gradients():
    wx, R, b = random_inputs(recurrent_scale=3.0)
    loss_weights = 1e3 * torch.randn(B, S, NH, DH, dtype=wx.dtype, generator=torch.Generator().manual_seed(3))

    def grads(clip):
        return torch.autograd.grad((scan(wx, R, b, recurrent_grad_clip=clip) * loss_weights).sum(), (wx, R, b))

    unclipped = grads(None)
    for ours, reference in zip(grads(1e30), unclipped):
        assert torch.equal(ours, reference)
    clipped = grads(10.0)
    assert max_deviation(clipped[0][:, 0], unclipped[0][:, 0]) > 1.0
    assert torch.equal(clipped[0][:, -1], unclipped[0][:, -1])  # last step: no recurrent path involved


def test_clip_applies_to_recurrent_gradient_only_two_steps():
    """Two steps; the gradient into h_1 via R is clamped by hand, its external gradient is not."""
    clip = 10.0
    wx, R, b = random_inputs(seq_len=2, recurrent_scale=3.0)
    generator = torch.Generator().manual_seed(4)
    external_h1 = 50.0 * torch.randn(B, NH, DH, dtype=wx.dtype, generator=generator)  # dL/dh_1 from outside
    external_h2 = 20.0 * torch.randn(B, NH, DH, dtype=wx.dtype, generator=generator)  # dL/dh_2 from outside

    h = scan(wx, R, b, recurrent_grad_clip=clip)
    grads = torch.autograd.grad((h[:, 0] * external_h1).sum() + (h[:, 1] * external_h2).sum(), (wx, R, b))

    # Reference built from unclipped scans: step 2 sees h_1 as a separate leaf (its only use is via R).
    _, state_1 = scan(wx[:, :1], R, b, return_state=True)
    h1_leaf = state_1.h.detach().requires_grad_()
    h_2 = scan(wx[:, 1:], R, b, initial_state=state_1._replace(h=h1_leaf))[:, 0]
    loss_2 = (h_2 * external_h2).sum()
    (recurrent_h1,) = torch.autograd.grad(loss_2, h1_leaf, retain_graph=True)
    assert (recurrent_h1.abs() > clip).any() and (recurrent_h1.abs() < clip).any()
    assert (external_h1.abs() > clip).any()  # clipping the external or total gradient would change the result
    reference = torch.autograd.grad(
        (loss_2, state_1.h), (wx, R, b), grad_outputs=(None, external_h1 + recurrent_h1.clamp(-clip, clip))
    )
    for ours, expected in zip(grads, reference):
        assert max_deviation(ours, expected) < 1e-10


# --- 5. robustness ------------------------------------------------------------------------------


@pytest.mark.parametrize("forget_gate", ["sigmoid", "exp"])
def test_extreme_preactivations_give_finite_outputs_and_gradients(forget_gate):
    generator = torch.Generator().manual_seed(5)
    wx = (2 * torch.rand(B, 64, 4, NH, DH, generator=generator) - 1) * 1000  # pre-activations in [-1000, 1000]
    wx[:, :, :, 0, 0] = 1000.0
    wx[:, :, :, 1, 0] = -1000.0
    R = 10 * torch.randn(4, NH, DH, DH, generator=generator)
    b = torch.zeros(4, NH, DH)
    wx, R, b = (tensor.requires_grad_() for tensor in (wx, R, b))
    h, state = scan(wx, R, b, forget_gate=forget_gate, return_state=True)
    h.sum().backward()
    assert torch.isfinite(h).all() and all(torch.isfinite(field).all() for field in state)
    assert torch.isfinite(wx.grad).all() and torch.isfinite(R.grad).all() and torch.isfinite(b.grad).all()


def test_bfloat16_autocast_forward_is_finite_and_close():
    wx, R, b = random_inputs(torch.float32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        h = scan(wx, R, b)
    assert torch.isfinite(h).all()
    assert max_deviation(h.float(), scan(wx, R, b)) < 0.1


def test_exp_forget_gate_long_sequence_is_finite():
    wx, R, b = random_inputs(torch.float32, seq_len=200, input_scale=5.0)
    h, state = scan(wx + 3.0, R, b, forget_gate="exp", return_state=True)
    h.sum().backward()
    assert torch.isfinite(h).all() and torch.isfinite(wx.grad).all()
    assert state.m.max() > 100  # the stabiliser grew far beyond exp's float32 range


# --- 6. causality -------------------------------------------------------------------------------


def test_changing_input_at_step_t_leaves_earlier_outputs_unchanged():
    wx, R, b = random_inputs()
    h = scan(wx, R, b)
    t = 7
    wx_changed = wx.detach().clone()
    wx_changed[:, t] += torch.randn_like(wx_changed[:, t])
    h_changed = scan(wx_changed, R, b)
    assert torch.equal(h[:, :t], h_changed[:, :t])
    assert not torch.allclose(h[:, t], h_changed[:, t])


# --- 7. bad input -------------------------------------------------------------------------------


def test_backend_registration_and_explicit_torch_backend():
    assert "torch" in backends_of("slstm.scan")
    wx, R, b = random_inputs()
    assert torch.equal(scan(wx, R, b, backend="torch"), scan(wx, R, b))


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(wx=torch.zeros(B, S, 3, NH, DH)), r"wx .*\(B, S, 4, NH, DH\).*\(3, 12, 3, 2, 4\)"),
        (dict(wx=torch.zeros(S, 4, NH, DH)), r"wx .*\(12, 4, 2, 4\)"),
        (dict(wx=torch.zeros(B, 0, 4, NH, DH)), r"at least one time step"),
        (dict(R=torch.zeros(4, NH, DH, DH + 1)), r"R .*\(4, 2, 4, 4\).*\(4, 2, 4, 5\)"),
        (dict(b=torch.zeros(4, NH * DH)), r"b .*\(4, 2, 4\).*\(4, 8\)"),
        (dict(initial_state=SLSTMState(*[torch.zeros(B, NH * DH)] * 4)), r"initial_state\.h .*\(3, 8\)"),
        (dict(forget_gate="tanh"), r"'tanh'.*\['sigmoid', 'exp'\]"),
        (dict(recurrent_grad_clip=0.0), r"recurrent_grad_clip .*0\.0"),
        (dict(recurrent_grad_clip=-10.0), r"recurrent_grad_clip .*-10\.0"),
        (dict(backend="cuda_fused"), r"'cuda_fused'.*'auto'.*'torch'"),
    ],
)
def test_bad_input_raises_value_error_naming_value_and_choices(change, message):
    arguments = dict(wx=torch.zeros(B, S, 4, NH, DH), R=torch.zeros(4, NH, DH, DH), b=torch.zeros(4, NH, DH))
    arguments.update(change)
    with pytest.raises(ValueError, match=message):
        scan(arguments.pop("wx"), arguments.pop("R"), arguments.pop("b"), **arguments)


# --- slow: a longer sequence against the official cell -------------------------------------------


@pytest.mark.slow
def test_matches_official_cell_long_sequence_float32():
    wx, R, b = random_inputs(torch.float32, batch=8, seq_len=512, input_scale=2.0)
    h, _ = run_official(official_cell(R, b), wx.detach())
    assert max_deviation(scan(wx, R, b), h) < 1e-4
