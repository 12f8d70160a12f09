"""Greedy generation with any language model that has ``init_state(batch)`` and ``step(token_t, state)``.

The prompt is fed token by token through ``step`` (the recurrent models' constant-memory path), then each
new token is the argmax of the last logits. ``cache_capacity`` gives a model whose state grows (a Transformer's
key-value cache) a static cache of that many positions (``init_static_state``; ``needed_capacity`` tells how many a
generation steps), the others their usual state. ``compile_step=True`` runs ``step`` through ``torch.compile``:
at batch 1 a step is dozens of tiny ops, and fusing them removes most of the per-op overhead (the compiled
step is traced once per model and state shape; the first call pays the compilation).
"""

import weakref
from collections.abc import Callable

import torch
from torch import nn

_COMPILED_STEPS: "weakref.WeakKeyDictionary[nn.Module, Callable]" = weakref.WeakKeyDictionary()


def compiled_step(model: nn.Module) -> Callable:
    """``model.step`` under ``torch.compile``, compiled once per model."""
    if model not in _COMPILED_STEPS:
        _COMPILED_STEPS[model] = torch.compile(model.step, dynamic=False)
    return _COMPILED_STEPS[model]


def initial_state(model: nn.Module, batch: int, capacity: int | None = None):
    """The state before the first token: with a ``capacity``, a model's static state of that many positions where it
    has one (``init_static_state``), else its usual ``init_state``."""
    if capacity is not None and hasattr(model, "init_static_state"):
        return model.init_static_state(batch, capacity)
    return model.init_state(batch)


def needed_capacity(prompt_length: int, max_new_tokens: int) -> int:
    """Positions a generation steps through: the prompt's and each new token's but the last."""
    return prompt_length + max(max_new_tokens - 1, 0)


def greedy_generate(
    model: nn.Module,
    prompt: torch.Tensor,
    max_new_tokens: int,
    *,
    cache_capacity: int | None = None,
    compile_step: bool = False,
    on_token: Callable[[int], None] | None = None,
) -> torch.Tensor:
    """prompt (B, P) token ids, P >= 1 -> (B, P + max_new_tokens): the prompt followed by greedy tokens.

    ``on_token(index)`` is called as each new token is chosen (progress bars, per-token timing): between two calls
    the model steps once.
    """
    if prompt.dim() != 2 or prompt.shape[1] < 1:
        raise ValueError(f"prompt must be (batch, length >= 1) token ids; got shape {tuple(prompt.shape)}")
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0; got {max_new_tokens}")
    step = compiled_step(model) if compile_step else model.step
    with torch.inference_mode():
        state = initial_state(model, prompt.shape[0], cache_capacity)
        for token_t in prompt.unbind(1):  # (B,) each
            logits, state = step(token_t, state)  # (B, V)
        tokens = [prompt]
        for index in range(max_new_tokens):
            if index > 0:
                logits, state = step(token_t, state)
            token_t = logits.argmax(-1)  # (B,)
            tokens.append(token_t[:, None])
            if on_token is not None:
                on_token(index)
        return torch.cat(tokens, dim=1)  # (B, P + max_new_tokens)
