"""The xLSTM options of the paper's LM ablations: the mLSTM gating variants (Table ablstudies, bottom) and the mLSTM in
a post up-projection block (Table abl_matrixmemory); their defaults are today's model (tests/models/test_xlstm_oracle.py
compares it with the official package)."""

import math

import pytest
import torch

import kernels.mlstm as mlstm_kernels
from kernels.backends import backends_of
from kernels.mlstm.gates import log_forget_gate
from models.registry import build_backbone
from models.xlstm.config import MLSTMLayerConfig, XLSTMLanguageModelConfig
from models.xlstm.gates import HeadGate, gate_preactivations
from models.xlstm.language_model import XLSTMLanguageModel
from models.xlstm.mlstm_layer import MLSTMLayer
from models.xlstm.presets import stack_config

FORMULATIONS = ("parallel", "chunkwise", "recurrent")
# every backend of every form but mlstm_kernels and triton (GPU backends)
CPU_BACKENDS = [
    (formulation, backend)
    for formulation in FORMULATIONS
    for backend in ["auto", *backends_of(f"mlstm.{formulation}")]
    if backend not in ("mlstm_kernels", "triton")
]
# Table ablstudies (bottom), row by row: (forget: input dependent, learnable bias, bias init), (input: the same)
PAPER_GATING = {
    "No Gates, forget bias +inf": ((False, False, "infinity"), (False, False, "zeros")),
    "No Gates": ((False, False, "linspace"), (False, False, "zeros")),
    "Forget Gate": ((True, True, "linspace"), (False, False, "zeros")),
    "Input Gate": ((False, False, "linspace"), (True, True, "normal")),
    "Forget Gate Bias": ((False, True, "linspace"), (False, False, "zeros")),
    "Forget + Input Gate Bias": ((False, True, "linspace"), (False, True, "normal")),
    "Forget Gate + Input Gate Bias": ((True, True, "linspace"), (False, True, "normal")),
    "Forget Gate + Input Gate": ((True, True, "linspace"), (True, True, "normal")),
}
OPTIONS = ("input_dependent", "learnable_bias", "bias_init")
NO_GATES_INF = {
    "forget_gate_input_dependent": False,
    "forget_gate_learnable_bias": False,
    "forget_gate_bias_init": "infinity",
    "input_gate_input_dependent": False,
    "input_gate_learnable_bias": False,
    "input_gate_bias_init": "zeros",
}
POST_UP_PROJECTION = {
    "mlstm_block": "post_up_projection",
    "feedforward": {"gated": False, "activation": "relu^2", "proj_factor": 4.0},
}


def gating(row: str) -> dict:
    forget, input_ = PAPER_GATING[row]
    return {
        f"{gate}_gate_{option}": value
        for gate, values in (("forget", forget), ("input", input_))
        for option, value in zip(OPTIONS, values)
    }


def layer(seed: int = 0, embedding_dim: int = 32, **options) -> MLSTMLayer:
    torch.manual_seed(seed)
    return MLSTMLayer(MLSTMLayerConfig(**options), embedding_dim, num_blocks=2).double()


def head_gate(input_dependent: bool, learnable_bias: bool, bias_init: str) -> HeadGate:
    gate = HeadGate(6, 4, input_dependent, learnable_bias, bias_init).double()
    gate.reset_parameters()
    if gate.weight is not None:
        torch.nn.init.normal_(gate.weight)  # the init is zero: make the input visible
    return gate


def test_a_gate_that_is_not_input_dependent_has_no_weight_and_ignores_the_input():
    x, other = torch.randn(2, 5, 6, dtype=torch.float64), torch.randn(2, 5, 6, dtype=torch.float64)
    fixed, dependent = head_gate(False, True, "linspace"), head_gate(True, True, "linspace")
    assert fixed.weight is None and [name for name, _ in fixed.named_parameters()] == ["bias"]
    (bias_only, from_input), (bias_only_again, from_other) = (
        gate_preactivations([inputs], [fixed, dependent]) for inputs in (x, other)
    )
    torch.testing.assert_close(bias_only, fixed.bias[None, :, None].expand(2, 4, 5), rtol=0, atol=0)
    torch.testing.assert_close(bias_only_again, bias_only, rtol=0, atol=0)
    assert (from_input - from_other).abs().min() > 0  # an input-dependent gate sees every input


def test_the_shared_matmul_gives_each_gate_its_own_pre_activation():
    x = torch.randn(3, 7, 6, dtype=torch.float64)
    gates = [head_gate(True, True, "normal"), head_gate(True, True, "linspace")]
    for gate, computed in zip(gates, gate_preactivations([x], gates)):
        torch.testing.assert_close(computed, (x @ gate.weight.T + gate.bias).transpose(1, 2), rtol=1e-12, atol=0)


def test_bias_initialisations_are_the_papers():
    """[3, 6]: equidistant in the interval over the heads; N(0, 0.1); 0; +inf."""
    linspace = head_gate(False, False, "linspace").bias
    torch.testing.assert_close(linspace, torch.tensor([3.0, 4.0, 5.0, 6.0], dtype=torch.float64), rtol=0, atol=0)
    assert (head_gate(False, False, "zeros").bias == 0).all()
    assert (head_gate(False, False, "infinity").bias == math.inf).all()
    torch.manual_seed(0)
    normal = HeadGate(1, 20000, False, False, "normal")
    normal.reset_parameters()
    assert normal.bias.mean().abs() < 0.003 and normal.bias.std().item() == pytest.approx(0.1, rel=0.03)


def test_a_fixed_bias_gets_no_gradient_and_an_optimiser_step_leaves_it_alone():
    options = gating("Forget Gate Bias")  # forget bias learnable, input gate bias fixed at 0
    mlstm = layer(**options)
    buffers, parameters = dict(mlstm.named_buffers()), dict(mlstm.named_parameters())
    assert set(buffers) == {"input_gate.bias"} and "input_gate.bias" not in parameters
    assert "forget_gate.bias" in parameters and "forget_gate.weight" not in parameters
    fixed_before = buffers["input_gate.bias"].clone()
    learnable_before = parameters["forget_gate.bias"].detach().clone()
    optimizer = torch.optim.AdamW(mlstm.parameters(), lr=0.1, weight_decay=0.1)
    mlstm(torch.randn(2, 9, 32, dtype=torch.float64)).square().sum().backward()
    assert buffers["input_gate.bias"].grad is None and parameters["forget_gate.bias"].grad.abs().sum() > 0
    optimizer.step()
    torch.testing.assert_close(mlstm.input_gate.bias, fixed_before, rtol=0, atol=0)
    assert (mlstm.forget_gate.bias - learnable_before).abs().min() > 0


def test_fixed_biases_and_missing_weights_change_the_parameter_count_by_exactly_their_size():
    """Per gate: no input dependence drops its (NH, 3 inner) weight; a fixed bias leaves the parameters (NH)."""
    full = sum(p.numel() for p in layer().parameters())
    inner, heads = layer().inner_dim, MLSTMLayerConfig().num_heads
    for row in PAPER_GATING:
        options = gating(row)
        expected = full - sum(
            3 * inner * heads * (not options[f"{gate}_gate_input_dependent"])
            + heads * (not options[f"{gate}_gate_learnable_bias"])
            for gate in ("forget", "input")
        )
        assert sum(p.numel() for p in layer(**options).parameters()) == expected, row


def test_a_forget_gate_bias_of_infinity_is_a_forget_gate_of_exactly_one():
    f = gate_preactivations([torch.randn(2, 5, 6)], [head_gate(False, False, "infinity").float()])[0]
    assert (f == math.inf).all()
    assert (log_forget_gate(f, "sigmoid") == 0).all()


@pytest.mark.parametrize("formulation, backend", CPU_BACKENDS)
def test_forget_gate_one_and_input_gate_one_is_the_papers_unforgetting_memory(formulation, backend):
    """f = 1 and i = exp(0) = 1 make the paper's mLSTM (Section 2.3) a plain running sum: C_t = sum_s v_s k_s^T,
    n_t = sum_s k_s (k scaled by 1/sqrt(d)), h_t = C_t q_t / max(|n_t^T q_t|, 1). Every form and CPU backend gives it
    from the pre-activations f = +inf and i = 0, finite, with finite gradients."""
    g = torch.Generator().manual_seed(0)
    B, NH, S, DH = 2, 3, 11, 8
    q, k, v = (torch.randn(B, NH, S, DH, generator=g, dtype=torch.float64, requires_grad=True) for _ in range(3))
    i, f = torch.zeros(B, NH, S, dtype=torch.float64), torch.full((B, NH, S), math.inf, dtype=torch.float64)
    options = {"chunk_size": 4} if formulation == "chunkwise" else {}
    h = getattr(mlstm_kernels, formulation)(q, k, v, i, f, eps=0.0, backend=backend, **options)
    scaled_k = k / math.sqrt(DH)
    C = torch.cumsum(scaled_k[..., :, None] * v[..., None, :], dim=2)  # (B, NH, S, DH, DH), C_t^T of the paper
    n = torch.cumsum(scaled_k, dim=2)  # (B, NH, S, DH)
    expected = (q[..., None, :] @ C)[..., 0, :] / (q * n).sum(-1, keepdim=True).abs().clamp(min=1)
    torch.testing.assert_close(h, expected, rtol=1e-10, atol=1e-10)
    assert all(torch.isfinite(grad).all() for grad in torch.autograd.grad(h.sum(), (q, k, v)))


@pytest.mark.parametrize("formulation", FORMULATIONS)
def test_every_paper_gating_variant_runs_and_steps_as_it_runs_forward(formulation):
    tokens = torch.randint(0, 20, (2, 9))
    for row in PAPER_GATING:
        torch.manual_seed(0)
        mlstm = MLSTMLayerConfig(formulation=formulation, chunk_size=4, eps=0.0, **gating(row))
        model = XLSTMLanguageModel(
            XLSTMLanguageModelConfig(stack=stack_config("xlstm_1_0", 32, 2, mlstm=mlstm), vocab_size=20)
        ).double()
        logits = model(tokens)
        logits.logsumexp(-1).sum().backward()
        assert torch.isfinite(logits).all(), row
        assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None), row
        with torch.no_grad():
            state = model.init_state(2)
            for t in range(tokens.shape[1]):
                step_logits, state = model.step(tokens[:, t], state)
                torch.testing.assert_close(step_logits, logits[:, t], rtol=0, atol=1e-9, msg=row)


def test_post_up_projection_block_is_the_mlstm_then_a_non_gated_relu2_feed_forward():
    backbone = build_backbone("xlstm_1_0", embedding_dim=32, num_blocks=2, **POST_UP_PROJECTION)
    block = backbone.blocks[0]
    assert type(block.layer).__name__ == "MLSTMPostUpProjectionLayer"
    assert block.ffn.proj_up.weight.shape == (128, 32) and block.ffn.proj_down.weight.shape == (32, 128)  # factor 4
    x = torch.randn(3, 32)
    torch.testing.assert_close(block.ffn(x), block.ffn.proj_down(torch.relu(block.ffn.proj_up(x)).square()))
    plain = build_backbone("xlstm_1_0", embedding_dim=32, num_blocks=2)
    assert plain.blocks[0].ffn is None  # the pre up-projection block has no feed-forward


@pytest.mark.parametrize("conv1d_kernel_size", [0, 4])
def test_post_up_projection_stack_is_causal_and_steps_as_it_runs_forward(conv1d_kernel_size):
    torch.manual_seed(0)
    backbone = build_backbone(
        "xlstm_1_0",
        embedding_dim=32,
        num_blocks=2,
        mlstm={"conv1d_kernel_size": conv1d_kernel_size, "eps": 0.0},
        **POST_UP_PROJECTION,
    ).double()
    with torch.no_grad():
        for parameter in backbone.parameters():
            parameter.add_(0.2 * torch.randn_like(parameter))  # gate and projection weights away from their init
        x = torch.randn(2, 10, 32, dtype=torch.float64)
        changed = x.clone()
        changed[:, 6] += torch.randn(2, 32, dtype=torch.float64)  # not a constant: the LayerNorm removes that
        before, after = backbone(x), backbone(changed)
        torch.testing.assert_close(after[:, :6], before[:, :6], rtol=0, atol=0)
        assert (after[:, 6:] - before[:, 6:]).abs().max() > 1e-3
        state = backbone.init_state(2)
        for t in range(10):
            y_t, state = backbone.step(x[:, t], state)
            torch.testing.assert_close(y_t, before[:, t], rtol=0, atol=1e-9)
