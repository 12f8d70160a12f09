"""RWKV-4: the WKV kernel against transformers' reference loop and our recurrence, the backbone against
transformers' RwkvModel weight for weight, the backbone contract, the paper's parameter counts, config errors."""

import pytest
import torch

from kernels.wkv4 import WKV4State, initial_state, wkv4, wkv4_step
from models.language_model import LanguageModel
from models.registry import build_backbone
from models.rwkv4.config import LANGUAGE_MODEL_PRESETS, TIED_EMBEDDINGS
from tests.backbone_contract import assert_causal, assert_step_matches_forward


def _modeling_rwkv():
    """transformers' RWKV module, the oracle (skips only the tests that need it when transformers is absent)."""
    return pytest.importorskip("transformers.models.rwkv.modeling_rwkv")


def _wkv_inputs(batch=2, seq_len=13, channels=5, dtype=torch.float64, key_scale=3.0, seed=0):
    """Random WKV inputs, float32-representable so that transformers' internal float32 cast of k is exact."""
    generator = torch.Generator().manual_seed(seed)

    def randn(*shape, scale=1.0):
        return (scale * torch.randn(*shape, generator=generator)).to(dtype)  # scaled in float32, then widened

    time_decay, time_first = randn(channels, scale=2.0), randn(channels)
    return time_decay, time_first, randn(batch, seq_len, channels, scale=key_scale), randn(batch, seq_len, channels)


def _true_state(state: WKV4State) -> tuple[torch.Tensor, torch.Tensor]:
    """The unscaled sums (sum e^w v, sum e^w) a stabilised state stands for."""
    scale = torch.exp(state.log_scale)
    return state.weighted_values * scale, state.weights * scale


def _recurrence(time_decay, time_first, k, v, state):
    outputs = []
    for t in range(k.shape[1]):
        wkv_t, state = wkv4_step(time_decay, time_first, k[:, t], v[:, t], state)
        outputs.append(wkv_t)
    return torch.stack(outputs, dim=1), state


@pytest.mark.parametrize("seq_len, chunk_size", [(1, 16), (13, 4), (16, 16), (37, 8), (40, 64)])
def test_wkv_matches_the_transformers_reference_loop(seq_len, chunk_size):
    time_decay, time_first, k, v = _wkv_inputs(seq_len=seq_len)
    wkv, state = wkv4(time_decay, time_first, k, v, return_state=True, chunk_size=chunk_size)
    reference = _modeling_rwkv().rwkv_linear_attention_cpu
    expected, expected_state = reference(time_decay, time_first, k, v, return_state=True)
    torch.testing.assert_close(wkv, expected, rtol=0, atol=1e-12)
    expected_values, expected_weights = (s * torch.exp(expected_state[2]) for s in expected_state[:2])
    values, weights = _true_state(state)
    torch.testing.assert_close(values, expected_values, rtol=1e-12, atol=0)
    torch.testing.assert_close(weights, expected_weights, rtol=1e-12, atol=0)


@pytest.mark.parametrize("chunk_size", [1, 4, 16])
def test_wkv_from_a_state_matches_the_recurrent_step(chunk_size):
    time_decay, time_first, k, v = _wkv_inputs(seq_len=21)
    _, start = _recurrence(time_decay, time_first, k[:, :5], v[:, :5], initial_state(2, 5, dtype=torch.float64))
    wkv, state = wkv4(time_decay, time_first, k, v, initial_state=start, return_state=True, chunk_size=chunk_size)
    expected, expected_state = _recurrence(time_decay, time_first, k, v, start)
    torch.testing.assert_close(wkv, expected, rtol=0, atol=1e-12)
    for got, want in zip(_true_state(state), _true_state(expected_state)):
        torch.testing.assert_close(got, want, rtol=1e-12, atol=0)


def test_wkv_stays_finite_for_extreme_keys_and_decays():
    time_decay, time_first = torch.tensor([-8.0, 0.0, 5.0, 9.0]), torch.tensor([-30.0, 0.0, 30.0, 3.0])
    k = 60 * torch.randn(2, 100, 4, generator=torch.Generator().manual_seed(0))
    v = torch.randn(2, 100, 4, generator=torch.Generator().manual_seed(1))
    wkv = wkv4(time_decay, time_first, k, v, chunk_size=16)
    expected, _ = _recurrence(time_decay, time_first, k, v, initial_state(2, 4))
    assert torch.isfinite(wkv).all()
    torch.testing.assert_close(wkv, expected, rtol=1e-4, atol=1e-5)


def test_wkv_gradients_are_those_of_the_function():
    inputs = [t.requires_grad_() for t in _wkv_inputs(seq_len=11, channels=3)]

    def two_segments(time_decay, time_first, k, v):
        """A chunked segment whose state feeds a second one and a recurrent step: gradients flow through states."""
        first, state = wkv4(time_decay, time_first, k[:, :6], v[:, :6], return_state=True, chunk_size=4)
        second, state = wkv4(
            time_decay, time_first, k[:, 6:], v[:, 6:], initial_state=state, return_state=True, chunk_size=4
        )
        last, state = wkv4_step(time_decay, time_first, k[:, 0], v[:, 0], state)
        return first, second, last, *_true_state(state)

    assert torch.autograd.gradcheck(two_segments, inputs)


def test_wkv_checks_its_inputs():
    time_decay, time_first, k, v = _wkv_inputs()
    with pytest.raises(ValueError, match=r"time_decay and time_first must have shape \(C,\)"):
        wkv4(time_decay[:-1], time_first, k, v)
    with pytest.raises(ValueError, match="valid choices"):
        wkv4(time_decay, time_first, k, v, backend="cuda")
    with pytest.raises(ValueError, match="chunk_size must be a positive int"):
        wkv4(time_decay, time_first, k, v, chunk_size=0)


def _perturbed_rwkv4(embedding_dim=16, num_blocks=2, **options) -> torch.nn.Module:
    torch.manual_seed(0)
    backbone = build_backbone("rwkv4", embedding_dim=embedding_dim, num_blocks=num_blocks, **options)
    with torch.no_grad():
        for parameter in backbone.parameters():
            parameter.add_(0.2 * torch.randn_like(parameter))
    return backbone


def _transformers_twin(ours) -> torch.nn.Module:
    """transformers' RwkvModel holding our weights: ln0 is its blocks.0.pre_ln, time/channel mix its
    attention/feed_forward; no inference-time rescaling of the residual stream."""
    D, num_blocks, modeling_rwkv = ours.config.embedding_dim, ours.config.num_blocks, _modeling_rwkv()
    hf_config = modeling_rwkv.RwkvConfig(
        vocab_size=8,
        hidden_size=D,
        num_hidden_layers=num_blocks,
        context_length=64,
        intermediate_size=ours.config.ffn_inner_dim,
        layer_norm_epsilon=ours.config.norm_eps,
        rescale_every=0,
    )
    twin = modeling_rwkv.RwkvModel(hf_config).eval()
    weights = {"embeddings.weight": twin.embeddings.weight}
    for ours_norm, name in ((ours.input_norm, "blocks.0.pre_ln"), (ours.final_norm, "ln_out")):
        weights[f"{name}.weight"], weights[f"{name}.bias"] = ours_norm.weight, ours_norm.bias
    mixes = {"k": "key", "v": "value", "r": "receptance"}
    for index, block in enumerate(ours.blocks):
        prefix = f"blocks.{index}."
        for ours_norm, name in ((block.time_mix_norm, "ln1"), (block.channel_mix_norm, "ln2")):
            weights[f"{prefix}{name}.weight"], weights[f"{prefix}{name}.bias"] = ours_norm.weight, ours_norm.bias
        for module, name in ((block.time_mix, "attention"), (block.channel_mix, "feed_forward")):
            for parameter_name, tensor in module.state_dict().items():
                if parameter_name.startswith("time_mix_"):
                    parameter_name, tensor = "time_mix_" + mixes[parameter_name[-1]], tensor.view(1, 1, D)
                weights[f"{prefix}{name}.{parameter_name}"] = tensor
    twin.load_state_dict({name: tensor.detach().clone() for name, tensor in weights.items()}, strict=True)
    return twin


@pytest.mark.parametrize(
    "dtype, atol",
    [
        # transformers' CPU WKV loop rounds k to float32 even in float64 models: measured 6.3e-8 on outputs ~4.
        (torch.float64, 1e-6),
        (torch.float32, 1e-5),
    ],
)
def test_backbone_matches_transformers_rwkv_weight_for_weight(dtype, atol):
    ours = _perturbed_rwkv4(embedding_dim=32, num_blocks=3)
    twin = _transformers_twin(ours)
    ours, twin = ours.to(dtype).eval(), twin.to(dtype)
    x = torch.randn(3, 37, 32, dtype=dtype, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = twin(inputs_embeds=x, use_cache=False).last_hidden_state
        torch.testing.assert_close(ours(x), expected, rtol=0, atol=atol)


def test_backbone_keeps_the_contract():
    assert_step_matches_forward(_perturbed_rwkv4(), 16)
    assert_step_matches_forward(_perturbed_rwkv4(chunk_size=3), 16, length=10)
    assert_causal(_perturbed_rwkv4(), 16)


def test_backbone_trains_every_parameter():
    backbone = _perturbed_rwkv4()  # the reference init zeroes several projections, which would block some gradients
    backbone(torch.randn(2, 12, 16)).square().mean().backward()
    for name, parameter in backbone.named_parameters():
        assert parameter.grad is not None and torch.isfinite(parameter.grad).all(), name
        assert parameter.grad.abs().sum() > 0, name


def test_initialisation_follows_the_reference():
    backbone = build_backbone("rwkv4", embedding_dim=8, num_blocks=3)
    last = backbone.blocks[2].time_mix  # depth 1: decay exponent 0.7 + 1.3 = 2
    torch.testing.assert_close(last.time_decay, -5 + 8 * (torch.arange(8) / 7) ** 2)
    torch.testing.assert_close(last.time_first[:3], torch.tensor([-1.2040, -0.7040, -1.7040]), atol=1e-4, rtol=0)
    torch.testing.assert_close(last.time_mix_k, (torch.arange(8) / 8) ** (1 / 3))
    torch.testing.assert_close(last.time_mix_v, (torch.arange(8) / 8) ** (1 / 3) + 0.3)
    for zeroed in (last.key, last.receptance, last.output, backbone.blocks[0].channel_mix.value):
        assert zeroed.weight.abs().max() == 0
    key = backbone.blocks[0].channel_mix.key.weight  # (32, 8), orthogonal with gain 2
    torch.testing.assert_close(key.T @ key, 4 * torch.eye(8), atol=1e-5, rtol=0)


# Table spaj_peaklr (#Params M); Table spaj15b_model_results lists the 350M model as 430.
PAPER_MILLIONS = {"125m": 169.4, "350m": 430.5, "760m": 891.0, "1.3b": 1515.2, "2.7b": 2984.8}


@pytest.mark.parametrize("size", PAPER_MILLIONS)
def test_presets_have_the_paper_parameter_counts(size):
    preset = LANGUAGE_MODEL_PRESETS["rwkv4"][size]
    assert "rwkv4" not in TIED_EMBEDDINGS
    with torch.device("meta"):
        model = LanguageModel(build_backbone("rwkv4", **preset), 50304, preset["embedding_dim"])
    millions = sum(parameter.numel() for parameter in model.parameters()) / 1e6
    assert abs(millions - PAPER_MILLIONS[size]) <= 0.005 * PAPER_MILLIONS[size], millions


@pytest.mark.parametrize(
    "options, message",
    [
        ({"backend": "fla"}, r"rwkv4.backend='fla' is not valid; valid choices: \['auto', 'torch'\]"),
        ({"chunk_size": 0}, r"rwkv4.chunk_size=0 must be positive"),
        ({"ffn_proj_factor": 1.01}, r"rwkv4.ffn_proj_factor=1.01 times embedding_dim=16 must be a whole number"),
        ({"dim_att": 16}, r"unknown rwkv4 option\(s\) \['dim_att'\]; valid choices: \['embedding_dim'"),
    ],
)
def test_bad_configs_fail_with_the_value_and_the_choices(options, message):
    with pytest.raises(ValueError, match=message):
        build_backbone("rwkv4", embedding_dim=16, num_blocks=2, **options)
