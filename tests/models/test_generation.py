"""Greedy generation: every generated token is the argmax of the model's own forward pass on the sequence so far,
eagerly and with the compiled step."""

import pytest
import torch

from models.generation import compiled_step, greedy_generate, needed_capacity
from models.language_model import LanguageModel
from models.registry import build_backbone
from models.xlstm.config import MLSTMLayerConfig, XLSTMLanguageModelConfig
from models.xlstm.language_model import XLSTMLanguageModel
from models.xlstm.presets import stack_config

VOCAB = 20


def _perturbed(model: torch.nn.Module) -> torch.nn.Module:
    """Random weights everywhere (the official init zeroes gate weights), so every path matters."""
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.2 * torch.randn_like(parameter))
    return model


def xlstm_lm(ratio: str = "xlstm_1_1", dtype=torch.float64) -> XLSTMLanguageModel:
    torch.manual_seed(0)
    # eps = 0: the recurrent step and the parallel forward then agree to round-off (see test_xlstm_model.py)
    stack = stack_config(ratio, embedding_dim=32, num_blocks=2, mlstm=MLSTMLayerConfig(eps=0.0))
    return _perturbed(XLSTMLanguageModel(XLSTMLanguageModelConfig(stack=stack, vocab_size=VOCAB))).to(dtype)


def llama_lm() -> LanguageModel:
    torch.manual_seed(0)
    return _perturbed(LanguageModel(build_backbone("llama", embedding_dim=32, num_blocks=2), VOCAB, 32)).double()


def assert_greedy(model, tokens, prompt_length):
    """Each token after the prompt is the argmax of forward() on the tokens before it (teacher forcing)."""
    with torch.no_grad():
        logits = model(tokens[:, :-1])  # (B, S - 1, V)
    torch.testing.assert_close(tokens[:, prompt_length:], logits[:, prompt_length - 1 :].argmax(-1), rtol=0, atol=0)


@pytest.mark.parametrize("make", [xlstm_lm, llama_lm], ids=["xlstm_1_1", "llama"])
def test_generated_tokens_are_the_forward_argmax(make):
    model = make()
    prompt = torch.randint(0, VOCAB, (3, 5))
    tokens = greedy_generate(model, prompt, max_new_tokens=12)
    assert tokens.shape == (3, 17)
    assert torch.equal(tokens[:, :5], prompt)
    assert_greedy(model, tokens, prompt_length=5)


def gpt3_lm() -> LanguageModel:
    torch.manual_seed(0)
    backbone = build_backbone("gpt3", embedding_dim=32, num_blocks=2, max_context_length=32)
    return _perturbed(LanguageModel(backbone, VOCAB, 32)).double()


@pytest.mark.parametrize("make", [llama_lm, gpt3_lm], ids=["llama", "gpt3"])
@pytest.mark.parametrize("new", [0, 1, 9])
def test_a_static_cache_generates_what_the_growing_cache_does(make, new):
    """The static cache holds exactly the positions stepped (none spare: one more step is refused) and gives the
    tokens of the growing one, which the forward pass checks (test above)."""
    model = make()
    prompt = torch.randint(0, VOCAB, (2, 4))
    capacity = needed_capacity(4, new)
    tokens = greedy_generate(model, prompt, max_new_tokens=new, cache_capacity=capacity)
    assert torch.equal(tokens, greedy_generate(model, prompt, max_new_tokens=new))
    assert_greedy(model, tokens, prompt_length=4)
    with torch.no_grad():
        state = model.init_static_state(2, capacity)
        for token_t in tokens[:, :capacity].unbind(1):
            _, state = model.step(token_t, state)
        with pytest.raises(IndexError, match=f"holds {capacity} positions, all written"):
            model.step(tokens[:, 0], state)


@pytest.mark.slow  # minutes of the default suite's 10 (make test-slow)
def test_compiled_step_gives_the_eager_logits_and_tokens():
    model = xlstm_lm("xlstm_1_1", dtype=torch.float32)  # one mLSTM and one sLSTM block: one compilation
    step = compiled_step(model)
    assert compiled_step(model) is step  # compiled once per model
    tokens = torch.randint(0, VOCAB, (2, 9))
    with torch.inference_mode():
        eager_state = compiled_state = model.init_state(2)
        for token_t in tokens.unbind(1):
            eager, eager_state = model.step(token_t, eager_state)
            compiled, compiled_state = step(token_t, compiled_state)
            torch.testing.assert_close(compiled, eager, rtol=1e-5, atol=1e-5)
    prompt = tokens[:, :3]
    assert torch.equal(greedy_generate(model, prompt, 8, compile_step=True), greedy_generate(model, prompt, 8))


def test_on_token_is_called_once_per_new_token():
    seen = []
    greedy_generate(xlstm_lm(), torch.zeros(1, 1, dtype=torch.long), 4, on_token=seen.append)
    assert seen == [0, 1, 2, 3]


@pytest.mark.parametrize(
    "prompt, new, message",
    [
        (torch.zeros(4, dtype=torch.long), 3, r"prompt must be \(batch, length >= 1\).*\(4,\)"),
        (torch.zeros(1, 0, dtype=torch.long), 3, r"prompt must be .*\(1, 0\)"),
        (torch.zeros(1, 2, dtype=torch.long), -1, r"max_new_tokens must be >= 0; got -1"),
    ],
)
def test_bad_arguments_name_the_value(prompt, new, message):
    with pytest.raises(ValueError, match=message):
        greedy_generate(xlstm_lm(), prompt, new)
