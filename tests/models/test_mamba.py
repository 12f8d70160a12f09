"""Mamba: the selective scan against transformers' reference scan and our recurrence, the backbone against
transformers' MambaModel weight for weight, the backbone contract, the paper's parameter counts, config errors."""

import math

import pytest
import torch
import torch.nn.functional as F

from kernels.selective_scan import initial_state, selective_scan, selective_scan_step
from models.language_model import LanguageModel
from models.mamba.config import LANGUAGE_MODEL_PRESETS, TIED_EMBEDDINGS, MambaConfig
from models.registry import build_backbone
from tests.backbone_contract import assert_causal, assert_step_matches_forward


def _modeling_mamba():
    """transformers' Mamba module, the oracle (skips only the tests that need it when transformers is absent)."""
    return pytest.importorskip("transformers.models.mamba.modeling_mamba")


def _scan_inputs(batch=2, seq_len=13, inner=6, state_dim=4, dtype=torch.float64, seed=0):
    """Random scan inputs, float32-representable so that transformers' internal float32 casts are exact."""
    generator = torch.Generator().manual_seed(seed)

    def randn(*shape):
        return torch.randn(*shape, generator=generator).to(dtype)

    x, B, C = randn(batch, seq_len, inner), randn(batch, seq_len, state_dim), randn(batch, seq_len, state_dim)
    dt = F.softplus(2 * randn(batch, seq_len, inner))  # (B, S, DI), spread over ~0.02 .. 5
    A = -torch.exp(randn(inner, state_dim))  # (DI, N)
    return x, dt, A, B, C, randn(inner)


def _recurrence(x, dt, A, B, C, D, state):
    """The scan one step at a time (the recurrent form)."""
    outputs = []
    for t in range(x.shape[1]):
        y_t, state = selective_scan_step(x[:, t], dt[:, t], A, B[:, t], C[:, t], D, state)
        outputs.append(y_t)
    return torch.stack(outputs, dim=1), state


@pytest.mark.parametrize("seq_len, chunk_size", [(1, 8), (13, 4), (16, 16), (37, 8), (40, 64), (29, 6)])
def test_selective_scan_matches_the_transformers_reference_scan(seq_len, chunk_size):
    x, dt, A, B, C, D = _scan_inputs(seq_len=seq_len)
    y, final_state = selective_scan(x, dt, A, B, C, D, return_state=True, chunk_size=chunk_size)
    expected, expected_state = _modeling_mamba().mamba_selective_scan(
        x.transpose(1, 2), dt.transpose(1, 2), A, B.transpose(1, 2), C.transpose(1, 2), D, return_last_state=True
    )
    torch.testing.assert_close(y, expected.transpose(1, 2), rtol=0, atol=1e-12)
    torch.testing.assert_close(final_state, expected_state, rtol=0, atol=1e-12)


@pytest.mark.parametrize("chunk_size", [1, 4, 16])
def test_selective_scan_from_a_state_matches_the_recurrent_step(chunk_size):
    x, dt, A, B, C, D = _scan_inputs(seq_len=21)
    start = torch.randn(2, 6, 4, dtype=torch.float64)
    y, final_state = selective_scan(x, dt, A, B, C, D, initial_state=start, return_state=True, chunk_size=chunk_size)
    expected, expected_state = _recurrence(x, dt, A, B, C, D, start)
    torch.testing.assert_close(y, expected, rtol=0, atol=1e-12)
    torch.testing.assert_close(final_state, expected_state, rtol=0, atol=1e-12)


def test_selective_scan_gradients_are_those_of_the_function():
    """The analytic backward (recomputation by chunks, adjoint scan) against finite differences."""
    inputs = [t.requires_grad_() for t in _scan_inputs(batch=2, seq_len=11, inner=3, state_dim=2)]
    start = torch.randn(2, 3, 2, dtype=torch.float64, requires_grad=True)

    def scan(x, dt, A, B, C, D, start):
        return selective_scan(x, dt, A, B, C, D, initial_state=start, return_state=True, chunk_size=4)

    assert torch.autograd.gradcheck(scan, (*inputs, start))


def test_selective_scan_keeps_half_precision_inputs_in_their_dtype():
    x, dt, A, B, C, D = _scan_inputs(dtype=torch.float32)
    expected = selective_scan(x, dt, A, B, C, D)
    y = selective_scan(*(t.to(torch.bfloat16) for t in (x, dt, A, B, C, D)))
    assert y.dtype == torch.bfloat16
    torch.testing.assert_close(y.float(), expected, rtol=0.05, atol=0.05)


def test_selective_scan_backends_and_bad_inputs():
    x, dt, A, B, C, D = _scan_inputs()
    with pytest.raises(RuntimeError, match="not available on device cpu"):
        selective_scan(x, dt, A, B, C, D, backend="mamba_ssm")
    with pytest.raises(ValueError, match="valid choices"):
        selective_scan(x, dt, A, B, C, D, backend="cuda")
    with pytest.raises(ValueError, match="chunk_size must be a positive integer; got 0"):
        selective_scan(x, dt, A, B, C, D, chunk_size=0)
    with pytest.raises(ValueError, match=r"B and C must have shape \(B, S, N\)"):
        selective_scan(x, dt, A, B[:, :-1], C, D)
    assert initial_state(3, 6, 4).shape == (3, 6, 4)


def _perturbed_mamba(embedding_dim=16, num_blocks=2, **options) -> torch.nn.Module:
    torch.manual_seed(0)
    backbone = build_backbone("mamba", embedding_dim=embedding_dim, num_blocks=num_blocks, **options)
    with torch.no_grad():
        for parameter in backbone.parameters():
            parameter.add_(0.1 * torch.randn_like(parameter))
    return backbone


def _transformers_twin(ours) -> torch.nn.Module:
    """transformers' MambaModel (slow torch path) holding our weights; residual kept in the model dtype."""
    config, modeling_mamba = ours.config, _modeling_mamba()
    hf_config = modeling_mamba.MambaConfig(
        vocab_size=8,
        hidden_size=config.embedding_dim,
        num_hidden_layers=config.num_blocks,
        state_size=config.state_dim,
        expand=config.expand,
        conv_kernel=config.conv_kernel_size,
        time_step_rank=config.resolved_dt_rank,
        use_bias=config.proj_bias,
        use_conv_bias=True,
        layer_norm_epsilon=config.norm_eps,
        residual_in_fp32=False,
        use_mambapy=False,
    )
    twin = modeling_mamba.MambaModel(hf_config).eval()
    weights = {"embeddings.weight": twin.embeddings.weight, "norm_f.weight": ours.final_norm.weight}
    for index, block in enumerate(ours.blocks):
        weights[f"layers.{index}.norm.weight"] = block.norm.weight
        for name, tensor in block.mixer.state_dict().items():
            weights[f"layers.{index}.mixer.{name}"] = tensor
    twin.load_state_dict({name: tensor.detach().clone() for name, tensor in weights.items()}, strict=True)
    return twin


@pytest.mark.parametrize(
    "dtype, atol",
    [
        # transformers casts to float32 inside its RMSNorm and selective scan even for float64 models (A_log, B, x,
        # D, the dt bias), so float64 agrees to float32 rounding: measured 3.8e-7 on outputs of size ~3.6.
        (torch.float64, 2e-6),
        (torch.float32, 1e-5),
    ],
)
def test_backbone_matches_transformers_mamba_weight_for_weight(dtype, atol):
    ours = _perturbed_mamba(embedding_dim=32, num_blocks=2)
    twin = _transformers_twin(ours)
    ours, twin = ours.to(dtype).eval(), twin.to(dtype)
    x = torch.randn(3, 37, 32, dtype=dtype, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = twin(inputs_embeds=x).last_hidden_state
        torch.testing.assert_close(ours(x), expected, rtol=0, atol=atol)


def test_backbone_keeps_the_contract():
    assert_step_matches_forward(_perturbed_mamba(), 16)
    assert_step_matches_forward(_perturbed_mamba(chunk_size=2), 16, length=9)
    assert_causal(_perturbed_mamba(), 16)


def test_backbone_trains_every_parameter():
    backbone = build_backbone("mamba", embedding_dim=16, num_blocks=2)
    backbone(torch.randn(2, 12, 16)).square().mean().backward()
    for name, parameter in backbone.named_parameters():
        assert parameter.grad is not None and torch.isfinite(parameter.grad).all(), name
        assert parameter.grad.abs().sum() > 0, name


def test_initialisation_follows_the_reference():
    torch.manual_seed(0)
    backbone = build_backbone("mamba", embedding_dim=64, num_blocks=4)
    mixer = backbone.blocks[0].mixer
    torch.testing.assert_close(mixer.A_log[5], torch.log(torch.arange(1, 17, dtype=torch.float32)))
    torch.testing.assert_close(mixer.D, torch.ones(128))
    dt = F.softplus(mixer.dt_proj.bias)
    assert dt.min() >= 1e-3 * (1 - 1e-5) and dt.max() <= 0.1 * (1 + 1e-5)
    assert mixer.dt_proj.weight.abs().max() <= 1 / math.sqrt(4)  # dt_rank = ceil(64 / 16) = 4
    # out_proj: PyTorch's default bound 1 / sqrt(fan_in) divided by sqrt(num_blocks)
    assert mixer.out_proj.weight.abs().max() <= 1 / math.sqrt(128) / math.sqrt(4)
    assert mixer.out_proj.weight.abs().max() > 0.8 / math.sqrt(128) / math.sqrt(4)


# Table spaj_peaklr (#Params M); Table spaj15b_model_results lists the 350M model as 423.
PAPER_MILLIONS = {"125m": 167.8, "350m": 423.1, "760m": 870.5, "1.3b": 1475.3, "2.7b": 2897.2}


@pytest.mark.parametrize("size", PAPER_MILLIONS)
def test_presets_have_the_paper_parameter_counts(size):
    preset = LANGUAGE_MODEL_PRESETS["mamba"][size]
    assert "mamba" not in TIED_EMBEDDINGS
    with torch.device("meta"):
        model = LanguageModel(build_backbone("mamba", **preset), 50304, preset["embedding_dim"])
    millions = sum(parameter.numel() for parameter in model.parameters()) / 1e6
    assert abs(millions - PAPER_MILLIONS[size]) <= 0.005 * PAPER_MILLIONS[size], millions


@pytest.mark.parametrize(
    "options, message",
    [
        (
            {"backend": "cuda"},
            r"mamba.backend='cuda' is not valid; valid choices: \['auto', 'torch', 'mamba_ssm', 'triton'\]",
        ),
        ({"chunk_size": 0}, r"mamba.chunk_size=0 must be positive"),
        ({"state_dim": 0}, r"mamba.state_dim=0 must be positive"),
        ({"dt_min": 0.5}, r"mamba.dt_min=0.5 must not exceed mamba.dt_max=0.1"),
        ({"d_state": 16}, r"unknown mamba option\(s\) \['d_state'\]; valid choices: \['embedding_dim'"),
    ],
)
def test_bad_configs_fail_with_the_value_and_the_choices(options, message):
    with pytest.raises(ValueError, match=message):
        build_backbone("mamba", embedding_dim=16, num_blocks=2, **options)


def test_dt_rank_defaults_to_the_reference_rule():
    assert MambaConfig(embedding_dim=768).resolved_dt_rank == 48
    assert MambaConfig(embedding_dim=100).resolved_dt_rank == 7
    assert MambaConfig(embedding_dim=100, dt_rank=3).resolved_dt_rank == 3
