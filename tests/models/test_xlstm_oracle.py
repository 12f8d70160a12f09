"""Our xLSTM equals the official implementation (xlstm==2.0.6) weight for weight: outputs, step and gradients."""

import dataclasses
import functools

import pytest
import torch

pytest.importorskip("xlstm")

from xlstm.blocks.mlstm.backends import parallel_stabilized_simple  # noqa: E402
from xlstm.blocks.mlstm.cell import mLSTMCell  # noqa: E402

from models.xlstm.language_model import XLSTMLanguageModel  # noqa: E402
from models.xlstm.mlstm_layer import MLSTMLayer  # noqa: E402
from models.xlstm.official import from_official  # noqa: E402
from tests.official_models import STACKS, official_model  # noqa: E402

RATIOS = list(STACKS)
# float32: logits of magnitude ~4 after 8 blocks carry ~2e-5 of round-off in the official model itself (measured
# against its own float64 run), so the two float32 models can differ by twice that; test_float32_accuracy checks
# that ours is as close to the float64 truth as the official one.
TOLERANCE = {torch.float64: dict(rtol=0, atol=1e-10), torch.float32: dict(rtol=1e-5, atol=5e-5)}
B, S, D, V = 2, 12, 32, 40


def _inputs(kind: str, dtype: torch.dtype, seed: int = 1) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    if kind == "lm":
        return torch.randint(0, V, (B, S), generator=generator)
    return torch.randn(B, S, D, generator=generator, dtype=torch.float64).to(dtype)


def _pair(ratio: str, kind: str, dtype: torch.dtype):
    official = official_model(
        ratio, embedding_dim=D, context_length=S, vocab_size=V if kind == "lm" else None, dtype=dtype
    )
    return official, from_official(official)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("kind", ["stack", "lm"])
@pytest.mark.parametrize("ratio", RATIOS)
def test_forward_equals_official(ratio, kind, dtype):
    official, ours = _pair(ratio, kind, dtype)
    x = _inputs(kind, dtype)
    with torch.no_grad():
        expected, actual = official(x), ours(x)
    assert actual.shape == expected.shape
    assert actual.dtype == dtype
    torch.testing.assert_close(actual, expected, **TOLERANCE[dtype])


@pytest.mark.parametrize("ratio", RATIOS)
def test_float32_is_as_accurate_as_the_official_float32(ratio):
    """Both float32 models against the float64 official model with the same weights."""
    official32, ours32 = _pair(ratio, "lm", torch.float32)
    official64 = official_model(ratio, embedding_dim=D, context_length=S, vocab_size=V, dtype=torch.float64)
    tokens = _inputs("lm", torch.float32)
    with torch.no_grad():
        truth = official64(tokens)
        official_error = (official32(tokens).double() - truth).abs().max().item()
        our_error = (ours32(tokens).double() - truth).abs().max().item()
    assert our_error <= 2 * official_error + 1e-6, (our_error, official_error)


@pytest.mark.parametrize("kind", ["stack", "lm"])
@pytest.mark.parametrize("ratio", RATIOS)
def test_step_equals_official_step(ratio, kind):
    official, ours = _pair(ratio, kind, torch.float64)
    x = _inputs(kind, torch.float64)
    official_state, our_state = None, ours.init_state(B)
    with torch.no_grad():
        for t in range(S):
            expected, official_state = official.step(x[:, t : t + 1], official_state)
            actual, our_state = ours.step(x[:, t], our_state)
            torch.testing.assert_close(actual, expected[:, 0], **TOLERANCE[torch.float64])


def _gradient_model(official):
    """Our import of an official model whose parameters hold their own gradients: the same mapping, applied to
    gradients (norm weights are imported as 1 + w, so their gradient is the imported value minus 1)."""
    with torch.no_grad():
        for parameter in official.parameters():
            parameter.copy_(parameter.grad)
    mapped = from_official(official)
    return {name: value - 1 if name.endswith("norm.weight") else value for name, value in mapped.named_parameters()}


def _without_normaliser_eps(official, ours):
    """Set the mLSTM normaliser eps to 0 in both models. The official parallel form lets gradient flow through its
    stabilizer m, which only the eps term makes non-zero; the paper (and our kernels) give m no gradient. With eps
    = 0 the stabilized forms are exactly m-independent, so gradients must agree to round-off."""
    for block in official.modules():
        if isinstance(block, mLSTMCell):
            block.backend_fn = functools.partial(parallel_stabilized_simple, eps=0.0)
    for module in ours.modules():
        if isinstance(module, MLSTMLayer):
            module.config = dataclasses.replace(module.config, eps=0.0)


def _gradients(official, ours, kind):
    x = _inputs(kind, torch.float64)
    output_weights = torch.randn(B, S, V if kind == "lm" else D, dtype=torch.float64)
    inputs = {}
    for name, model in (("official", official), ("ours", ours)):
        model_input = x if kind == "lm" else x.clone().requires_grad_(True)
        (model(model_input) * output_weights).sum().backward()
        inputs[name] = model_input
    return inputs


@pytest.mark.parametrize("kind", ["stack", "lm"])
@pytest.mark.parametrize("ratio", RATIOS)
def test_gradients_equal_official(ratio, kind):
    official, ours = _pair(ratio, kind, torch.float64)
    _without_normaliser_eps(official, ours)
    inputs = _gradients(official, ours, kind)
    if kind == "stack":
        torch.testing.assert_close(inputs["ours"].grad, inputs["official"].grad, rtol=1e-9, atol=1e-10)
    expected = _gradient_model(official)
    for name, parameter in ours.named_parameters():
        torch.testing.assert_close(parameter.grad, expected[name], rtol=1e-9, atol=1e-10, msg=lambda m: f"{name}: {m}")  # noqa: B023 (called in this iteration)


@pytest.mark.parametrize("ratio", ["xlstm_1_0", "xlstm_7_1"])
def test_gradients_with_default_eps_differ_only_by_the_stabilizer_gradient(ratio):
    """With the default eps = 1e-6 the official gradient also carries the eps-sized path through m."""
    official, ours = _pair(ratio, "lm", torch.float64)
    _gradients(official, ours, "lm")
    expected = _gradient_model(official)
    for name, parameter in ours.named_parameters():
        relative_error = (parameter.grad - expected[name]).norm() / expected[name].norm().clamp_min(1e-12)
        assert relative_error < 1e-4, (name, relative_error.item())


def test_lm_has_untied_head_and_no_positional_encoding():
    official, ours = _pair("xlstm_1_1", "lm", torch.float64)
    assert isinstance(ours, XLSTMLanguageModel)
    assert ours.lm_head.weight is not ours.token_embedding.weight
    assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in official.parameters())


def test_from_official_rejects_other_modules():
    with pytest.raises(TypeError, match="xLSTMBlockStack or xLSTMLMModel"):
        from_official(torch.nn.Linear(2, 2))
