"""Llama and GPT-3 backbones: weight-for-weight equal to HF transformers' LlamaModel and GPT2Model, step with a
KV cache equals forward, causality, the paper's parameter counts, config errors."""

import pytest
import torch
import transformers
from transformers.models.llama import modeling_llama

from models.language_model import LanguageModel
from models.registry import build_backbone
from models.transformers.backbones import MODULES
from models.transformers.config import LANGUAGE_MODEL_PRESETS, TIED_EMBEDDINGS, GPT3Config, LlamaConfig
from tests.backbone_contract import assert_causal, assert_step_matches_forward

GPT2_VOCAB_PADDED = 50304
EMBEDDING_DIM, NUM_BLOCKS, NUM_HEADS, LENGTH = 64, 2, 4, 37


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Tiny tensors: a second intra-op thread only adds waits at every op on a busy machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _perturbed(backbone: torch.nn.Module) -> torch.nn.Module:
    """Move every parameter off its initial value, so that unit norm weights and zero biases are mapped too."""
    torch.manual_seed(1)
    with torch.no_grad():
        for parameter in backbone.parameters():
            parameter.add_(0.1 * torch.randn_like(parameter))
    return backbone.eval()


def _hf_llama_like(ours, attn_implementation: str) -> transformers.LlamaModel:
    config = ours.config
    reference = transformers.LlamaModel(
        transformers.LlamaConfig(
            vocab_size=7,
            hidden_size=config.embedding_dim,
            intermediate_size=config.ffn_hidden_dim,
            num_hidden_layers=config.num_blocks,
            num_attention_heads=config.num_heads,
            num_key_value_heads=config.num_heads,
            rms_norm_eps=config.norm_eps,
            attention_bias=False,
            mlp_bias=False,
            rope_parameters={"rope_type": "default", "rope_theta": config.rope_theta},
            max_position_embeddings=LENGTH,
            attn_implementation=attn_implementation,
        )
    )
    with torch.no_grad():
        for block, layer in zip(ours.blocks, reference.layers):
            for name in ("q_proj", "k_proj", "v_proj"):
                getattr(layer.self_attn, name).weight.copy_(getattr(block.attention, name).weight)
            layer.self_attn.o_proj.weight.copy_(block.attention.out_proj.weight)
            for name in ("gate_proj", "up_proj", "down_proj"):
                getattr(layer.mlp, name).weight.copy_(getattr(block.mlp, name).weight)
            layer.input_layernorm.weight.copy_(block.attention_norm.weight)
            layer.post_attention_layernorm.weight.copy_(block.mlp_norm.weight)
        reference.norm.weight.copy_(ours.final_norm.weight)
    return reference.eval()


def _hf_gpt2_like(ours) -> transformers.GPT2Model:
    config = ours.config
    reference = transformers.GPT2Model(
        transformers.GPT2Config(
            vocab_size=7,
            n_positions=config.max_context_length,
            n_embd=config.embedding_dim,
            n_layer=config.num_blocks,
            n_head=config.num_heads,
            n_inner=config.ffn_factor * config.embedding_dim,
            activation_function="gelu_new",
            layer_norm_epsilon=config.norm_eps,
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attn_pdrop=0.0,
            bos_token_id=None,
            eos_token_id=None,
        )
    )
    with torch.no_grad():
        reference.wpe.weight.copy_(ours.position_embedding.weight)
        for block, layer in zip(ours.blocks, reference.h):
            attention = block.attention
            projections = (attention.q_proj, attention.k_proj, attention.v_proj)
            # GPT-2's Conv1D stores the transposed weight, (in, out); c_attn holds q, k, v side by side.
            layer.attn.c_attn.weight.copy_(torch.cat([projection.weight.T for projection in projections], dim=1))
            layer.attn.c_attn.bias.copy_(torch.cat([projection.bias for projection in projections]))
            pairs = [
                (layer.attn.c_proj, attention.out_proj),
                (layer.mlp.c_fc, block.mlp.up_proj),
                (layer.mlp.c_proj, block.mlp.down_proj),
            ]
            for conv1d, linear in pairs:
                conv1d.weight.copy_(linear.weight.T)
                conv1d.bias.copy_(linear.bias)
            for hf_norm, norm in ((layer.ln_1, block.attention_norm), (layer.ln_2, block.mlp_norm)):
                hf_norm.load_state_dict(norm.state_dict())
        reference.ln_f.load_state_dict(ours.final_norm.state_dict())
    return reference.eval()


def _max_deviation(ours, reference, dtype) -> float:
    ours, reference = ours.to(dtype), reference.to(dtype)
    x = torch.randn(2, LENGTH, EMBEDDING_DIM, dtype=dtype, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        return (ours(x) - reference(inputs_embeds=x).last_hidden_state).abs().max().item()


def _rms_norm_in_input_precision(self, hidden_states):
    variance = hidden_states.pow(2).mean(-1, keepdim=True)
    return self.weight * (hidden_states * torch.rsqrt(variance + self.variance_epsilon))


def _rotary_in_input_precision(self, x, position_ids):
    theta, dim = self.config.rope_parameters["rope_theta"], self.inv_freq.shape[0] * 2
    inverse_frequencies = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=x.dtype) / dim)  # (DH/2,)
    angles = position_ids[..., None].to(x.dtype) * inverse_frequencies  # (B, S, DH/2)
    angles = torch.cat([angles, angles], dim=-1)  # (B, S, DH)
    return angles.cos(), angles.sin()


@pytest.mark.parametrize("attn_implementation", ["sdpa", "eager"])
def test_llama_matches_transformers_llama_in_float32(attn_implementation):
    ours = _perturbed(build_backbone("llama", embedding_dim=EMBEDDING_DIM, num_blocks=NUM_BLOCKS, num_heads=NUM_HEADS))
    assert _max_deviation(ours, _hf_llama_like(ours, attn_implementation), torch.float32) <= 1e-5


def test_llama_matches_transformers_llama_in_float64(monkeypatch):
    """HF's LlamaModel computes its RMSNorm and rotary angles in float32 even for float64 inputs (unchanged, it is
    4e-7 away from us in float64 here). We lift those two casts to compare the math at float64 round-off; the
    float32 test above checks HF's code as it is."""
    monkeypatch.setattr(modeling_llama.LlamaRMSNorm, "forward", _rms_norm_in_input_precision)
    monkeypatch.setattr(modeling_llama.LlamaRotaryEmbedding, "forward", _rotary_in_input_precision)
    ours = _perturbed(build_backbone("llama", embedding_dim=EMBEDDING_DIM, num_blocks=NUM_BLOCKS, num_heads=NUM_HEADS))
    assert _max_deviation(ours, _hf_llama_like(ours, "sdpa"), torch.float64) <= 1e-10


@pytest.mark.parametrize("dtype, tolerance", [(torch.float32, 1e-5), (torch.float64, 1e-10)])
def test_gpt3_matches_transformers_gpt2(dtype, tolerance):
    ours = _perturbed(
        build_backbone(
            "gpt3", embedding_dim=EMBEDDING_DIM, num_blocks=NUM_BLOCKS, num_heads=NUM_HEADS, max_context_length=64
        )
    )
    assert _max_deviation(ours, _hf_gpt2_like(ours), dtype) <= tolerance


@pytest.mark.parametrize("name", sorted(MODULES))
def test_step_with_kv_cache_equals_forward(name):
    backbone = _perturbed(build_backbone(name, embedding_dim=EMBEDDING_DIM, num_blocks=NUM_BLOCKS, num_heads=NUM_HEADS))
    assert_step_matches_forward(backbone, EMBEDDING_DIM, length=LENGTH, atol=1e-12, constant_memory=False)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_backbone_is_causal(name):
    backbone = build_backbone(name, embedding_dim=EMBEDDING_DIM, num_blocks=NUM_BLOCKS, num_heads=NUM_HEADS)
    assert_causal(_perturbed(backbone), EMBEDDING_DIM)


# Table spaj_peaklr (Llama, #Params M) and Table spaj15b_model_results (GPT-3, #Params M).
PAPER_PARAMETERS_M = {
    ("llama", "125m"): 162.2,
    ("llama", "350m"): 406.6,
    ("llama", "760m"): 834.1,
    ("llama", "1.3b"): 1420.4,
    ("llama", "2.7b"): 2779.5,
    ("gpt3", "350m"): 356,
}


@pytest.mark.parametrize("name, size", sorted(PAPER_PARAMETERS_M))
def test_presets_have_the_papers_parameter_counts(name, size):
    preset = LANGUAGE_MODEL_PRESETS[name][size]
    with torch.device("meta"):
        model = LanguageModel(
            build_backbone(name, **preset),
            GPT2_VOCAB_PADDED,
            preset["embedding_dim"],
            tie_weights=name in TIED_EMBEDDINGS,
        )
    count = sum(parameter.numel() for parameter in model.parameters()) / 1e6
    assert abs(count - PAPER_PARAMETERS_M[name, size]) <= 0.005 * PAPER_PARAMETERS_M[name, size]


def test_preset_sizes_are_complete():
    assert set(LANGUAGE_MODEL_PRESETS["llama"]) == {"125m", "350m", "760m", "1.3b", "2.7b"}
    assert set(LANGUAGE_MODEL_PRESETS["gpt3"]) == {"350m"}
    assert TIED_EMBEDDINGS == {"gpt3"}


def test_ffn_rounding_follows_metas_multiple_of():
    """Meta's Llama-7B (D = 4096, multiple_of = 256) has FFN size 11008."""
    assert LlamaConfig(embedding_dim=4096, ffn_multiple_of=256).ffn_hidden_dim == 11008


def test_default_heads_have_head_dim_64():
    assert LlamaConfig(embedding_dim=1024).num_heads == 16
    assert GPT3Config(embedding_dim=1024).num_heads == 16
    assert LlamaConfig(embedding_dim=32).num_heads == 1


@pytest.mark.parametrize("name", sorted(MODULES))
def test_small_model_trains(name):
    """The formal-language size: E = 64, 2 blocks, 4 heads; one AdamW step on a next-vector loss lowers it."""
    torch.manual_seed(0)
    backbone = build_backbone(name, embedding_dim=EMBEDDING_DIM, num_blocks=NUM_BLOCKS, num_heads=NUM_HEADS)
    x = torch.randn(16, 40, EMBEDDING_DIM)
    optimizer = torch.optim.AdamW(backbone.parameters(), lr=1e-3)
    losses = []
    for _ in range(2):
        loss = (backbone(x[:, :-1]) - x[:, 1:]).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        assert all(torch.isfinite(p.grad).all() for p in backbone.parameters())
        optimizer.step()
        losses.append(loss.item())
    assert losses[1] < losses[0]


def test_config_errors_name_the_field_and_choices():
    with pytest.raises(ValueError, match=r"unknown llama option\(s\) \['dropout'\]; valid choices: .*'rope_theta'"):
        build_backbone("llama", embedding_dim=64, num_blocks=2, dropout=0.1)
    with pytest.raises(ValueError, match="llama.num_heads=5 must be positive and divide embedding_dim=64"):
        build_backbone("llama", embedding_dim=64, num_blocks=2, num_heads=5)
    with pytest.raises(ValueError, match="gpt3.max_context_length=0 must be positive"):
        build_backbone("gpt3", embedding_dim=64, num_blocks=2, max_context_length=0)


def test_gpt3_rejects_sequences_longer_than_its_context():
    backbone = build_backbone("gpt3", embedding_dim=EMBEDDING_DIM, num_blocks=1, max_context_length=8)
    with pytest.raises(ValueError, match="sequence length 9 exceeds gpt3.max_context_length=8"):
        backbone(torch.randn(1, 9, EMBEDDING_DIM))
    state = backbone.init_state(1)
    for _ in range(8):
        _, state = backbone.step(torch.randn(1, EMBEDDING_DIM), state)
    with pytest.raises(ValueError, match="sequence length 9 exceeds"):
        backbone.step(torch.randn(1, EMBEDDING_DIM), state)


def test_gpt3_initialisation_scales_residual_projections():
    backbone = build_backbone("gpt3", embedding_dim=256, num_blocks=8)
    std = 0.02 / (2 * 8) ** 0.5
    residual = torch.cat([b.attention.out_proj.weight.flatten() for b in backbone.blocks])
    assert abs(residual.std().item() - std) < 0.05 * std
    assert abs(backbone.blocks[0].mlp.up_proj.weight.std().item() - 0.02) < 0.001
    assert all((b.attention.q_proj.bias == 0).all() for b in backbone.blocks)
