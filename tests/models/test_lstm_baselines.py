"""LSTM baselines: the textbook LSTM equations and torch.nn.LSTMCell as references, the backbone contract,
the paper's parameter counts (Table ablstudies) and config validation."""

import pytest
import torch
import torch.nn.functional as F

from models.language_model import LanguageModel
from models.lstm.backbones import MODULES
from models.lstm.config import LANGUAGE_MODEL_PRESETS, TIED_EMBEDDINGS, LSTMBlockConfig
from models.registry import build_backbone
from tests.backbone_contract import assert_causal, assert_step_matches_forward

D = 8


def _perturbed(name: str, num_blocks: int = 2, **options) -> torch.nn.Module:
    """A float64 backbone whose norm weights (and all other parameters) are moved away from their init."""
    torch.manual_seed(0)
    backbone = build_backbone(name, embedding_dim=D, num_blocks=num_blocks, **options).double()
    with torch.no_grad():
        for parameter in backbone.parameters():
            parameter.add_(0.2 * torch.randn_like(parameter))
    return backbone


def _textbook_lstm_layer(x, weight_ih, weight_hh, bias_ih, bias_hh):
    """Hochreiter & Schmidhuber's LSTM with forget gate, gates stacked [i, f, g, o] as PyTorch stores them."""
    batch, length, _ = x.shape
    h = x.new_zeros(batch, weight_hh.shape[1])  # (B, H)
    c = torch.zeros_like(h)
    outputs = []
    for t in range(length):
        pre = x[:, t] @ weight_ih.T + bias_ih + h @ weight_hh.T + bias_hh  # (B, 4H)
        i, f, g, o = pre.chunk(4, dim=-1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        outputs.append(h)
    return torch.stack(outputs, dim=1)  # (B, S, H)


def _cell_lstm(x, lstm: torch.nn.LSTM) -> torch.Tensor:
    """A single-layer nn.LSTM replayed with nn.LSTMCell holding copies of its weights."""
    cell = torch.nn.LSTMCell(lstm.input_size, lstm.hidden_size).double()
    with torch.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(cell, name).copy_(getattr(lstm, f"{name}_l0"))
    h = x.new_zeros(x.shape[0], lstm.hidden_size)  # (B, H)
    c = torch.zeros_like(h)
    outputs = []
    for t in range(x.shape[1]):
        h, c = cell(x[:, t], (h, c))
        outputs.append(h)
    return torch.stack(outputs, dim=1)  # (B, S, H)


def _layer_norm(x, norm: torch.nn.LayerNorm) -> torch.Tensor:
    return F.layer_norm(x, (D,), norm.weight, norm.bias, norm.eps)


def test_vanilla_lstm_follows_the_textbook_equations():
    backbone = _perturbed("lstm", num_blocks=3)
    x = torch.randn(3, 11, D, dtype=torch.float64)
    expected = x
    for layer in range(3):
        names = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
        weights = [getattr(backbone.lstm, f"{name}_l{layer}") for name in names]
        expected = _textbook_lstm_layer(expected, *weights)
    with torch.no_grad():
        torch.testing.assert_close(backbone(x), expected, rtol=0, atol=1e-12)
    assert not any(isinstance(m, torch.nn.LayerNorm) for m in backbone.modules()), "the vanilla LSTM has no norms"


def test_residual_lstm_is_pre_layernorm_residual_around_lstm_cells():
    backbone = _perturbed("lstm_residual", num_blocks=3)
    x = torch.randn(3, 11, D, dtype=torch.float64)
    expected = x
    for block in backbone.blocks:
        expected = expected + _cell_lstm(_layer_norm(expected, block.norm), block.lstm)
    expected = _layer_norm(expected, backbone.post_blocks_norm)
    with torch.no_grad():
        torch.testing.assert_close(backbone(x), expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("ffn_bias", [False, True])
def test_lstm_block_is_a_transformer_block_with_an_lstm_for_attention(ffn_bias):
    backbone = _perturbed("lstm_block", num_blocks=2, ffn_bias=ffn_bias, ffn_proj_factor=1.5)
    x = torch.randn(3, 11, D, dtype=torch.float64)
    expected = x
    for block in backbone.blocks:
        lstm_block, ffn = block.lstm_block, block.ffn
        expected = expected + _cell_lstm(_layer_norm(expected, lstm_block.norm), lstm_block.lstm)
        normed = _layer_norm(expected, block.ffn_norm)
        hidden = F.gelu(F.linear(normed, ffn.proj_up.weight, ffn.proj_up.bias))  # (B, S, 12)
        expected = expected + F.linear(hidden, ffn.proj_down.weight, ffn.proj_down.bias)
    expected = _layer_norm(expected, backbone.post_blocks_norm)
    assert backbone.blocks[0].ffn.proj_up.out_features == 12
    with torch.no_grad():
        torch.testing.assert_close(backbone(x), expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_backbone_contract(name):
    backbone = _perturbed(name)
    assert_step_matches_forward(backbone, D, atol=1e-12)
    assert_causal(backbone, D)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_float32_step_matches_forward(name):
    torch.manual_seed(0)
    backbone = build_backbone(name, embedding_dim=16, num_blocks=2).eval()
    x = torch.randn(2, 9, 16)
    with torch.no_grad():
        expected = backbone(x)
        state = backbone.init_state(2)
        for t in range(9):
            y_t, state = backbone.step(x[:, t], state)
            torch.testing.assert_close(y_t, expected[:, t], rtol=1e-5, atol=1e-6)


# Table ablstudies ("Ablation studies on the new xLSTM components"), column #Params M.
PAPER_PARAMETERS_M = {
    ("lstm", "350m"): 607.8,  # Vanilla Multi-Layer LSTM
    ("lstm_residual", "350m"): 506.1,  # Adding Resnet Backbone
    ("lstm_block", "350m"): 505.9,  # Adding Up-Projection Backbone
}


@pytest.mark.parametrize("name, size", sorted(PAPER_PARAMETERS_M))
def test_presets_have_the_paper_parameter_counts(name, size):
    preset = LANGUAGE_MODEL_PRESETS[name][size]
    with torch.device("meta"):
        model = LanguageModel(build_backbone(name, **preset), 50304, preset["embedding_dim"], name in TIED_EMBEDDINGS)
    count_m = sum(p.numel() for p in model.parameters()) / 1e6
    assert round(count_m, 1) == PAPER_PARAMETERS_M[name, size]  # also well within the 0.5% tolerance
    assert abs(count_m / PAPER_PARAMETERS_M[name, size] - 1) < 0.005


def test_presets_hold_the_described_layers():
    with torch.device("meta"):
        vanilla = build_backbone("lstm", **LANGUAGE_MODEL_PRESETS["lstm"]["350m"])
        block = build_backbone("lstm_block", **LANGUAGE_MODEL_PRESETS["lstm_block"]["350m"])
    assert (vanilla.lstm.num_layers, vanilla.lstm.hidden_size) == (24, 1536)  # "24 layers and 1536 hidden size"
    lstms = [m for m in block.modules() if isinstance(m, torch.nn.LSTM)]
    ffns = [m for m in block.modules() if type(m).__name__ == "FeedForward"]
    assert len(lstms) == len(ffns) == 24  # every second of the 48 LSTM layers became an MLP


def test_training_step_on_a_formal_language_batch():
    """The formal-language setting: 2 blocks, E = 64, batch 64, length 40; every parameter gets a gradient."""
    for name in MODULES:
        backbone = build_backbone(name, embedding_dim=64, num_blocks=2)
        backbone(torch.randn(64, 40, 64)).square().mean().backward()
        missing = [n for n, p in backbone.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
        assert not missing, f"{name}: no gradient for {missing}"


@pytest.mark.parametrize(
    "name, options, message",
    [
        ("lstm", {"num_blocks": 0}, "lstm.num_blocks=0"),
        ("lstm_residual", {"norm_eps": -1.0}, "lstm_residual.norm_eps=-1.0"),
        ("lstm_block", {"ffn_proj_factor": 0.0}, "lstm_block.ffn_proj_factor=0.0"),
        ("lstm_block", {"ffn_proj_factor": 1.01}, "whole number"),
        ("lstm", {"slstm": {"conv1d_kernel_size": 0}}, "valid choices: ['embedding_dim', 'num_blocks']"),
    ],
)
def test_bad_config_is_rejected_naming_the_field(name, options, message):
    with pytest.raises(ValueError) as error:
        build_backbone(name, **{"embedding_dim": 8} | options)
    assert message in str(error.value)


def test_config_defaults_are_the_paper_choices():
    config = LSTMBlockConfig()
    assert (config.ffn_proj_factor, config.ffn_bias, config.norm_bias) == (4.0, False, False)
