"""The pre up-projection mLSTM block in its GPU form: head-wise projections (every form against torch.block_diag),
q, k, v reaching the kernel as views of the projections' outputs, the gates reading [q, k, v] in parts, and the block
under torch.compile(fullgraph=True) equal to eager."""

import pytest
import torch

import kernels.mlstm as mlstm_kernels
from models.xlstm.components import CausalConv1d, HeadwiseLinear, broadcast_headwise, headwise_linear
from models.xlstm.config import MLSTMLayerConfig
from models.xlstm.gates import HeadGate, gate_preactivations
from models.xlstm.mlstm_layer import MLSTMLayer


def block_diagonal_reference(projection: HeadwiseLinear) -> torch.Tensor:
    """(dim, dim) from torch's own block_diag of the blocks (out, in)"""
    return torch.block_diag(*projection.weight)


def seeded_projections(dim: int, num_blocks: int, count: int) -> list[HeadwiseLinear]:
    torch.manual_seed(0)
    projections = [HeadwiseLinear(dim, num_blocks, bias=True).double() for _ in range(count)]
    for projection in projections:
        torch.nn.init.normal_(projection.weight)
        torch.nn.init.normal_(projection.bias)
    return projections


def values_and_gradients(function, x: torch.Tensor, parameters: list[torch.Tensor]):
    y = function(x)
    gradients = torch.autograd.grad(y.square().sum(), [x, *parameters])
    return [y, *gradients]


@pytest.mark.parametrize("dim", [64, 640], ids=["dense", "einsum"])
def test_headwise_linear_of_two_maps_is_each_block_diagonal_map(dim):
    """The eager CPU forms (dense up to 512 features, einsum above) of q and k in one op equal x @ block_diag^T."""
    q_proj, k_proj = seeded_projections(dim, dim // 4, 2)
    parameters = [q_proj.weight, q_proj.bias, k_proj.weight, k_proj.bias]
    x = torch.randn(2, 3, dim, dtype=torch.float64, requires_grad=True)

    def reference(x):
        return torch.stack([x @ block_diagonal_reference(p).T + p.bias for p in (q_proj, k_proj)], -2)

    actual = values_and_gradients(lambda x: headwise_linear(x, [q_proj, k_proj]), x, parameters)
    for got, expected in zip(actual, values_and_gradients(reference, x, parameters)):
        torch.testing.assert_close(got, expected)
    assert actual[0].shape == (2, 3, 2, dim)


def test_broadcast_form_is_the_block_diagonal_map():
    """The form under torch.compile and on GPUs, run here in eager mode: values and gradients."""
    q_proj, k_proj = seeded_projections(48, 12, 2)
    weight = torch.stack([q_proj.weight, k_proj.weight]).detach().requires_grad_()  # (2, blocks, out, in)
    x = torch.randn(5, 48, dtype=torch.float64, requires_grad=True)

    def reference(x):
        return torch.stack([x @ torch.block_diag(*blocks).T for blocks in weight], -2)  # (5, 2, 48)

    actual = values_and_gradients(lambda x: broadcast_headwise(x, weight), x, [weight])
    for got, expected in zip(actual, values_and_gradients(reference, x, [weight])):
        torch.testing.assert_close(got, expected)


def test_gates_read_their_input_in_parts_as_if_concatenated():
    torch.manual_seed(0)
    gates = [HeadGate(12, 2, True, True, "normal").double(), HeadGate(12, 2, True, True, "linspace").double()]
    for gate in gates:
        gate.reset_parameters()
        torch.nn.init.normal_(gate.weight)  # not the initial zeros
    parts = [torch.randn(2, 3, 8, dtype=torch.float64), torch.randn(2, 3, 4, dtype=torch.float64)]
    for got, expected in zip(gate_preactivations(parts, gates), gate_preactivations([torch.cat(parts, -1)], gates)):
        torch.testing.assert_close(got, expected)


def test_q_k_v_reach_the_kernel_as_views_of_the_projections(monkeypatch):
    """No copy between the projections and the kernel: q and k share the one output of their op, v is its own
    projection's output, each in the (B, NH, S, DH) layout by strides."""
    layer = MLSTMLayer(MLSTMLayerConfig(num_heads=2), embedding_dim=32, num_blocks=1)  # inner 64, DH 32
    seen = {}
    chunkwise = mlstm_kernels.chunkwise

    def spy(q, k, v, i, f, **options):
        seen.update(q=q, k=k, v=v)
        return chunkwise(q, k, v, i, f, **options)

    monkeypatch.setattr(mlstm_kernels, "chunkwise", spy)
    layer(torch.randn(3, 5, 32))
    q, k, v = seen["q"], seen["k"], seen["v"]
    B, NH, S, DH, inner = 3, 2, 5, 32, 64
    assert q.shape == k.shape == v.shape == (B, NH, S, DH)
    assert q.untyped_storage().data_ptr() == k.untyped_storage().data_ptr()
    assert q.stride() == k.stride() == (S * 2 * inner, DH, 2 * inner, 1)  # rows of [q k] per step
    assert v.stride() == (S * inner, DH, inner, 1)


def seeded_mlstm_layer() -> MLSTMLayer:
    """A float64 layer on the chunkwise torch_autograd kernel (plain autograd ops, as dynamo traces them)."""
    torch.manual_seed(0)
    config = MLSTMLayerConfig(num_heads=2, backend="torch_autograd", chunk_size=8)
    layer = MLSTMLayer(config, embedding_dim=16, num_blocks=2).double()
    for name, parameter in layer.named_parameters():  # away from the initial zeros and ones
        if "gate" in name or "skip" in name or "norm" in name:
            torch.nn.init.normal_(parameter, std=0.5)
    return layer


@pytest.mark.slow  # dynamo, AOTAutograd and inductor's C++ builds: minutes on a busy CPU
def test_compiled_block_equals_eager_with_no_graph_break():
    """fullgraph=True fails on any graph break; inductor runs the fused forms (broadcast projections, shifted-sum
    convolution) that eager mode on a CPU does not."""
    layer = seeded_mlstm_layer()
    x = torch.randn(2, 20, 16, dtype=torch.float64, requires_grad=True)  # a ragged last chunk
    parameters = list(layer.parameters())
    compiled = torch.compile(layer, fullgraph=True, backend="inductor")
    expected = values_and_gradients(layer, x, parameters)
    for got, want in zip(values_and_gradients(compiled, x, parameters), expected):
        torch.testing.assert_close(got, want)


def test_shifted_sum_convolution_equals_conv1d():
    """The convolution's compiled form, run in eager mode, against torch's conv1d (what eager runs)."""
    torch.manual_seed(0)
    conv = CausalConv1d(6, 4).double()
    x = torch.randn(2, 9, 6, dtype=torch.float64, requires_grad=True)
    parameters = list(conv.parameters())
    for got, expected in zip(
        values_and_gradients(conv.shifted_sum, x, parameters), values_and_gradients(conv, x, parameters)
    ):
        torch.testing.assert_close(got, expected)
