"""A long sequence run chunk by chunk with the state carried (models.chunked_forward) gives the logits of one full
forward pass; recurrent models' states stay the same size as tokens go by, a Transformer's key-value cache grows."""

import pytest
import torch

from models.chunked_forward import chunked_logits, forward_chunk, state_grows
from models.language_model import LanguageModel
from models.registry import build_backbone
from models.xlstm.config import MLSTMLayerConfig, XLSTMLanguageModelConfig
from models.xlstm.language_model import XLSTMLanguageModel
from models.xlstm.presets import stack_config

VOCAB = 20


def perturbed(model: torch.nn.Module) -> torch.nn.Module:
    """Random weights everywhere (the official init zeroes gate weights), so every path matters."""
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.2 * torch.randn_like(parameter))
    return model.double().eval()


def xlstm_lm(ratio: str, num_blocks: int = 2, eps: float = 0.0, **options) -> XLSTMLanguageModel:
    """eps = 0: the recurrent step and the parallel forward then agree to round-off (see test_xlstm_model.py);
    kernel chunks of 4 steps, so a chunk of the evaluation spans several of them and ends inside one."""
    torch.manual_seed(0)
    stack = stack_config(
        ratio, embedding_dim=32, num_blocks=num_blocks, mlstm=MLSTMLayerConfig(eps=eps, chunk_size=4), **options
    )
    return perturbed(XLSTMLanguageModel(XLSTMLanguageModelConfig(stack=stack, vocab_size=VOCAB)))


def backbone_lm(name: str) -> LanguageModel:
    torch.manual_seed(0)
    return perturbed(LanguageModel(build_backbone(name, embedding_dim=32, num_blocks=2), VOCAB, 32))


MODELS = {
    "xlstm_1_0": lambda: xlstm_lm("xlstm_1_0"),
    "xlstm_7_1": lambda: xlstm_lm("xlstm_7_1", num_blocks=4),
    "xlstm_1_0 post up-projection": lambda: xlstm_lm("xlstm_1_0", mlstm_block="post_up_projection"),
    "mamba": lambda: backbone_lm("mamba"),
    "rwkv4": lambda: backbone_lm("rwkv4"),
    "llama": lambda: backbone_lm("llama"),
}


@pytest.mark.parametrize("name", ["xlstm_1_0", "xlstm_7_1", "xlstm_1_0 post up-projection", "mamba", "rwkv4"])
@pytest.mark.parametrize("chunk", [5, 16])  # a ragged last chunk; a chunk longer than the kernels' own chunks
def test_chunks_with_the_carried_state_give_the_full_forward_logits(name, chunk):
    model = MODELS[name]()
    tokens = torch.randint(0, VOCAB, (2, 37))
    with torch.no_grad():
        full = model(tokens)  # (B, S, V)
        chunked = torch.cat(list(chunked_logits(model, tokens, chunk)), dim=1)
    torch.testing.assert_close(chunked, full, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    "make",
    [lambda: xlstm_lm("xlstm_7_1", num_blocks=4, eps=1e-6), lambda: backbone_lm("mamba")],
    ids=["xlstm_7_1 with the trained eps", "mamba"],
)
def test_the_parallel_chunk_gives_the_stepped_chunk_from_a_carried_state(make):
    model = make()
    assert hasattr(model, "forward_chunk")  # a parallel pass, not the stepping fallback
    tokens = torch.randint(0, VOCAB, (2, 23))
    with torch.no_grad():
        _, state = forward_chunk(model, tokens[:, :11], model.init_state(2))
        parallel, parallel_state = model.forward_chunk(tokens[:, 11:], state)
        stepped, stepped_state = forward_chunk(StepOnly(model), tokens[:, 11:], state)
    torch.testing.assert_close(parallel, stepped, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(parallel_state, stepped_state, rtol=1e-5, atol=1e-5)


class StepOnly(torch.nn.Module):
    """A model's step alone, so that forward_chunk steps through the chunk."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def step(self, token_t, state):
        return self.model.step(token_t, state)


def test_a_backbone_without_a_parallel_chunk_gives_its_language_model_none():
    assert not hasattr(backbone_lm("rwkv4"), "forward_chunk")  # stepped through a chunk instead


@pytest.mark.parametrize("name, grows", [("xlstm_1_0", False), ("mamba", False), ("rwkv4", False), ("llama", True)])
def test_only_the_transformers_state_grows_with_the_tokens_seen(name, grows):
    assert state_grows(MODELS[name]()) is grows


def test_a_chunk_below_one_token_is_refused():
    with pytest.raises(ValueError, match="chunk=0 must be >= 1"):
        next(chunked_logits(MODELS["mamba"](), torch.zeros(1, 4, dtype=torch.long), 0))
