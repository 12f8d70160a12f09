"""Greedy generation with any language model that has ``init_state(batch)`` and ``step(token_t, state)``.

The prompt is fed token by token through ``step`` (the recurrent models' constant-memory path), then each
new token is the argmax of the last logits. ``compile_step=True`` runs ``step`` through ``torch.compile``:
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


def greedy_generate(
    model: nn.Module,
    prompt: torch.Tensor,
    max_new_tokens: int,
    *,
    compile_step: bool = False,
    on_token: Callable[[int], None] | None = None,
) -> torch.Tensor:
    """prompt (B, P) token ids, P >= 1 -> (B, P + max_new_tokens): the prompt followed by greedy tokens.

    ``on_token(index)`` is called after each new token (progress bars, per-token timing).
    """
    if prompt.dim() != 2 or prompt.shape[1] < 1:
        raise ValueError(f"prompt must be (batch, length >= 1) token ids; got shape {tuple(prompt.shape)}")
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0; got {max_new_tokens}")
    step = compiled_step(model) if compile_step else model.step
    with torch.inference_mode():
        state = model.init_state(prompt.shape[0])
        for token_t in prompt.unbind(1):  # (B,) each
            logits, state = step(token_t, state)  # (B, V)
        tokens = [prompt]
        for index in range(max_new_tokens):
            token_t = logits.argmax(-1)  # (B,)
            tokens.append(token_t[:, None])
            if index + 1 < max_new_tokens:
                logits, state = step(token_t, state)
            if on_token is not None:
                on_token(index)
        return torch.cat(tokens, dim=1)  # (B, P + max_new_tokens)
