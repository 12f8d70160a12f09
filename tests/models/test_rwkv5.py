"""RWKV-5 "Eagle": the chunked WKV kernel against the paper's sum form and against flash-linear-attention's naive
RWKV-6 recurrence (RWKV-6 with a data-independent decay is RWKV-5), the time mixing against the paper's equations,
the backbone contract, the repository's initialisation and the paper's parameter counts."""

import importlib.util
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import kernels.wkv5 as wkv5_module
from kernels.wkv5 import factorised_scores_fit, wkv5, wkv5_step
from models.language_model import LanguageModel
from models.registry import build_backbone
from models.rwkv5.config import LANGUAGE_MODEL_PRESETS
from tests.backbone_contract import assert_causal, assert_step_matches_forward

DOUBLE = torch.float64


def _wkv_sum_form(r, k, v, w, u, initial_state=None):
    """Eagle eq.: wkv_t = diag(u) k_t^T v_t + sum_{i<t} diag(w)^(t-1-i) k_i^T v_i (+ diag(w)^t S_0), y_t = r_t wkv_t;
    also the state after the last step, sum_i diag(w)^(S-1-i) k_i^T v_i + diag(w)^S S_0. w, u: (NH, DH)."""
    B, NH, S, DH = r.shape
    start = initial_state if initial_state is not None else torch.zeros(B, NH, DH, DH, dtype=r.dtype)
    outer = k[..., :, None] * v[..., None, :]  # (B, NH, S, DH, DH)
    outputs = []
    for t in range(S + 1):
        past = sum((w ** (t - 1 - i))[..., None] * outer[:, :, i] for i in range(t)) + (w**t)[..., None] * start
        if t == S:
            return torch.stack(outputs, 2), past
        wkv = u[..., None] * outer[:, :, t] + past  # (B, NH, DH, DH)
        outputs.append((r[:, :, t, :, None] * wkv).sum(-2))


def _random_wkv_inputs(seed, B=2, NH=3, S=21, DH=5, strong_decay=False):
    generator = torch.Generator().manual_seed(seed)
    r, k, v = (torch.randn(B, NH, S, DH, generator=generator, dtype=DOUBLE) for _ in range(3))
    time_decay = torch.randn(NH, DH, generator=generator, dtype=DOUBLE) - 1
    if strong_decay:  # decays down to exp(-exp(3)) = 2e-9 per step
        time_decay = time_decay.clamp(max=1) + 2
    u = torch.randn(NH, DH, generator=generator, dtype=DOUBLE)
    state = torch.randn(B, NH, DH, DH, generator=generator, dtype=DOUBLE)
    return r, k, v, time_decay, u, state


@pytest.mark.parametrize("length, chunk_size", [(1, 16), (21, 4), (21, 16), (21, 21), (21, 64), (32, 8)])
@pytest.mark.parametrize("strong_decay", [False, True])
def test_chunked_wkv_equals_the_papers_sum_form(length, chunk_size, strong_decay):
    r, k, v, time_decay, u, state = _random_wkv_inputs(length + chunk_size, S=length, strong_decay=strong_decay)
    expected, expected_state = _wkv_sum_form(r, k, v, torch.exp(-torch.exp(time_decay)), u, state)
    y, final_state = wkv5(
        r, k, v, -torch.exp(time_decay), u, initial_state=state, return_state=True, chunk_size=chunk_size
    )
    torch.testing.assert_close(y, expected, rtol=0, atol=1e-11)
    torch.testing.assert_close(final_state, expected_state, rtol=0, atol=1e-11)
    step_state, log_decay = state, -torch.exp(time_decay)
    for t in range(length):
        y_t, step_state = wkv5_step(r[:, :, t], k[:, :, t], v[:, :, t], log_decay, u, step_state)
        torch.testing.assert_close(y_t, expected[:, :, t], rtol=0, atol=1e-11)
    assert torch.isfinite(wkv5(r * 1e3, k * 1e3, v, log_decay, u, chunk_size=chunk_size)).all()


@pytest.mark.parametrize("strong_decay", [False, True])
def test_each_length_takes_the_scores_form_its_decays_allow_and_both_forms_agree(monkeypatch, strong_decay):
    """The chunk's scores come from one matmul with the decays folded into r and k where no factor can overflow,
    else from the pair weights; the sum form checks the whole kernel above, here both forms of the same chunks."""
    r, k, v, time_decay, u, state = _random_wkv_inputs(3, S=32, strong_decay=strong_decay)
    log_decay = -torch.exp(time_decay if strong_decay else time_decay.clamp(max=1))  # down to e^-e per step
    assert factorised_scores_fit(log_decay, 16) is not strong_decay  # decays of e^-20 per step need the pairs
    assert factorised_scores_fit(log_decay, 1000) is False
    chunks = [x.reshape(2, 3, 2, 16, 5) for x in (r, k)]
    pairwise = wkv5_module._pairwise_scores(*chunks, log_decay, 16)
    if not strong_decay:
        torch.testing.assert_close(wkv5_module._factorised_scores(*chunks, log_decay, 16), pairwise)
    taken = []
    for name in ("_factorised_scores", "_pairwise_scores"):
        form = getattr(wkv5_module, name)
        monkeypatch.setattr(wkv5_module, name, lambda *args, form=form, name=name: taken.append(name) or form(*args))
    wkv5(r, k, v, log_decay, u, chunk_size=16)
    assert taken == ["_pairwise_scores" if strong_decay else "_factorised_scores"]  # one call: 32 steps, 2 chunks


def _fla_naive_recurrent_rwkv6():
    """flash-linear-attention's pure-torch RWKV-6 recurrence, loaded from its file (the package's import pulls in
    triton and takes tens of seconds on CPU)."""
    spec = importlib.util.find_spec("fla")
    if spec is None or spec.origin is None:
        pytest.skip("flash-linear-attention is not installed")
    path = Path(spec.origin).parent / "ops" / "rwkv6" / "recurrent_naive.py"
    module_spec = importlib.util.spec_from_file_location("fla_rwkv6_recurrent_naive", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module.naive_recurrent_rwkv6


def test_chunked_wkv_equals_fla_rwkv6_naive_recurrence_with_constant_decay():
    naive_recurrent_rwkv6 = _fla_naive_recurrent_rwkv6()
    r, k, v, time_decay, u, state = _random_wkv_inputs(7, S=37, DH=8)
    log_decay = -torch.exp(time_decay)  # (NH, DH)
    w = log_decay[None, :, None, :].expand(r.shape[0], -1, r.shape[2], -1)  # fla takes log w per step
    expected, expected_state = naive_recurrent_rwkv6(
        r.float(),
        k.float(),
        v.float(),
        w.float(),
        u.float(),
        scale=1.0,
        initial_state=state.float(),
        output_final_state=True,
    )
    y, final_state = wkv5(
        r.float(),
        k.float(),
        v.float(),
        log_decay.float(),
        u.float(),
        initial_state=state.float(),
        return_state=True,
        chunk_size=8,
    )
    torch.testing.assert_close(y, expected, rtol=0, atol=1e-4)
    torch.testing.assert_close(final_state, expected_state, rtol=0, atol=1e-4)


def test_chunked_wkv_gradients():
    r, k, v, time_decay, u, state = _random_wkv_inputs(3, B=1, NH=2, S=7, DH=3)
    inputs = [x.requires_grad_() for x in (r, k, v, -torch.exp(time_decay), u, state)]
    assert torch.autograd.gradcheck(lambda *a: wkv5(*a[:5], initial_state=a[5], chunk_size=3), inputs)


def _perturbed(seed=0, **options):
    torch.manual_seed(seed)
    backbone = build_backbone("rwkv5", **options).double()
    with torch.no_grad():
        for parameter in backbone.parameters():  # away from the zero-initialised output weights
            parameter.add_(0.2 * torch.randn_like(parameter))
    return backbone


def _time_mix_reference(att, x):
    """Eagle time mixing, eqs. 11-17, with mu = 1 - time_mix: lerp(a, b) = a + (b - a) mu, a = x_t, b = x_{t-1};
    r, k, v, g = W lerp(...); wkv as the sum form; o = W_o (SiLU(g) * GroupNorm_heads(r wkv / head_size_divisor))."""
    B, S, D = x.shape
    NH, DH = att.time_decay.shape
    previous = F.pad(x, (0, 0, 1, -1))

    def lerp(mix):
        return x + (previous - x) * (1 - mix)

    r, k, v = (
        lerp(mix) @ W.weight.T
        for mix, W in ((att.time_mix_r, att.receptance), (att.time_mix_k, att.key), (att.time_mix_v, att.value))
    )
    g = lerp(att.time_mix_g) @ att.gate.weight.T
    heads = [z.view(B, S, NH, DH).transpose(1, 2) for z in (r, k, v)]
    wkv, _ = _wkv_sum_form(*heads, torch.exp(-torch.exp(att.time_decay)), att.time_faaaa)  # (B, NH, S, DH)
    per_head = wkv.transpose(1, 2) / att.config.head_size_divisor  # (B, S, NH, DH)
    mean, var = per_head.mean(-1, keepdim=True), per_head.var(-1, unbiased=False, keepdim=True)
    normed = ((per_head - mean) / torch.sqrt(var + att.ln_x.eps)).reshape(B, S, D) * att.ln_x.weight + att.ln_x.bias
    return (F.silu(g) * normed) @ att.output.weight.T


def test_time_mixing_equals_the_papers_equations():
    backbone = _perturbed(embedding_dim=16, num_blocks=2, head_size=8, chunk_size=4)
    att = backbone.blocks[1].att
    x = torch.randn(2, 11, 16, dtype=DOUBLE)
    with torch.no_grad():
        torch.testing.assert_close(att(x), _time_mix_reference(att, x), rtol=0, atol=1e-10)


def test_channel_mixing_equals_the_papers_equations():
    backbone = _perturbed(embedding_dim=16, num_blocks=1, head_size=8)
    ffn = backbone.blocks[0].ffn
    x = torch.randn(2, 9, 16, dtype=DOUBLE)
    previous = F.pad(x, (0, 0, 1, -1))
    r = (x + (previous - x) * (1 - ffn.time_mix_r)) @ ffn.receptance.weight.T
    k = (x + (previous - x) * (1 - ffn.time_mix_k)) @ ffn.key.weight.T
    with torch.no_grad():
        expected = torch.sigmoid(r) * (torch.relu(k) ** 2 @ ffn.value.weight.T)
        torch.testing.assert_close(ffn(x), expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    "options", [dict(head_size=8, chunk_size=4), dict(head_size=32, chunk_size=16)], ids=["4heads", "1head"]
)
def test_backbone_contract(options):
    backbone = _perturbed(embedding_dim=32, num_blocks=3, **options)
    assert_step_matches_forward(backbone, 32)
    assert_causal(backbone, 32)


def test_initialisation_follows_the_repository():
    """RWKV_Tmix_x052 / RWKV_CMix_x052 / generate_init_weight at 64b7fe4, 4 blocks of D = 16, heads of 8."""
    backbone = build_backbone("rwkv5", embedding_dim=16, num_blocks=4, head_size=8)
    n = torch.arange(16.0)
    for index, block in enumerate(backbone.blocks):
        ratio_0_to_1, ratio_1_to_almost_0 = index / 3, 1 - index / 4
        att, ffn = block.att, block.ffn
        torch.testing.assert_close(att.time_mix_k, (n / 16) ** ratio_1_to_almost_0)
        torch.testing.assert_close(att.time_mix_v, (n / 16) ** ratio_1_to_almost_0 + 0.3 * ratio_0_to_1)
        torch.testing.assert_close(att.time_mix_r, (n / 16) ** (0.5 * ratio_1_to_almost_0))
        torch.testing.assert_close(att.time_decay.flatten(), -6 + 5 * (n / 15) ** (0.7 + 1.3 * ratio_0_to_1))
        zigzag = ((n + 1) % 3 - 1) * 0.1
        torch.testing.assert_close(att.time_faaaa.flatten(), ratio_0_to_1 * (1 - n / 15) + zigzag)
        torch.testing.assert_close(att.ln_x.weight, torch.full((16,), ((1 + index) / 4) ** 0.7))
        torch.testing.assert_close(ffn.time_mix_r, (n / 16) ** ratio_1_to_almost_0)
        for zero in (att.output.weight, ffn.value.weight, ffn.receptance.weight):
            assert not zero.any()
        for linear, gain in ((att.receptance, 1.0), (att.key, 0.1), (att.gate, 0.1), (ffn.key, 1.0)):
            gram = (
                linear.weight.T @ linear.weight
                if linear.weight.shape[0] >= linear.weight.shape[1]
                else linear.weight @ linear.weight.T
            )
            torch.testing.assert_close(gram, gain**2 * torch.eye(gram.shape[0]), rtol=0, atol=1e-5)
    assert backbone.blocks[0].ffn.key.weight.shape == (64, 16)  # channel mix of 4 D


def test_small_model_trains_on_cpu():
    torch.manual_seed(0)
    model = LanguageModel(build_backbone("rwkv5", embedding_dim=64, num_blocks=2), 12, 64)
    tokens = torch.randint(0, 12, (8, 40))
    loss = F.cross_entropy(model(tokens).flatten(0, 1), tokens.roll(-1, 1).flatten())
    loss.backward()
    assert torch.isfinite(loss)
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())


def test_config_errors_name_the_field():
    with pytest.raises(ValueError, match="rwkv5.head_size=64 must divide rwkv5.embedding_dim=96"):
        build_backbone("rwkv5", embedding_dim=96)
    with pytest.raises(ValueError, match=r"unknown rwkv5 option\(s\) \['heads'\]; valid choices"):
        build_backbone("rwkv5", heads=2)
    with pytest.raises(ValueError, match="wkv5 chunk_size must be a positive int"):
        wkv5(*(torch.zeros(1, 1, 2, 2) for _ in range(3)), torch.zeros(1, 2), torch.zeros(1, 2), chunk_size=0)


# Table spaj_peaklr: RWKV-5 #Params in M. The table lists 2048 / 24 for 2.7B (the 1.3B dimensions); its count is
# reached by 2560 / 32, the dimensions of the table's other 2.7B models.
PAPER_PARAMETERS = {"125m": 176.5e6, "350m": 455.7e6, "760m": 947.8e6, "1.3b": 1616.0e6, "2.7b": 3194.7e6}


@pytest.mark.parametrize("size", sorted(PAPER_PARAMETERS))
def test_presets_have_the_papers_parameter_counts(size):
    preset = LANGUAGE_MODEL_PRESETS["rwkv5"][size]
    with torch.device("meta"):
        model = LanguageModel(build_backbone("rwkv5", **preset), 50304, preset["embedding_dim"])
    count = sum(p.numel() for p in model.parameters())
    assert math.isclose(count, PAPER_PARAMETERS[size], rel_tol=0.005), f"{size}: {count / 1e6:.1f}M"
