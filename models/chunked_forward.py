"""A language model run over a long sequence chunk by chunk, its recurrent state carried from chunk to chunk.

Any language model with ``init_state(batch)`` and ``step(token_t, state)`` can be run this way; one that also has
``forward_chunk(tokens, state)`` (a parallel pass over a chunk from a given state) runs each chunk in one pass, the
others step through the chunk's tokens. Memory then holds one chunk's activations and the state: flat in the
sequence's length exactly when the state does not grow with it, which ``state_grows(model)`` finds out by stepping
(a Transformer's key-value cache grows; an RNN's, SSM's or xLSTM's state does not).
"""

from typing import Any

import torch
from torch import nn
from torch.utils._pytree import tree_leaves


def state_elements(state: Any) -> int:
    """How many numbers a state holds (every tensor in its nested tuples, lists and dicts)."""
    return sum(leaf.numel() for leaf in tree_leaves(state) if isinstance(leaf, torch.Tensor))


def has_state(model: nn.Module) -> bool:
    return callable(getattr(model, "init_state", None)) and callable(getattr(model, "step", None))


@torch.no_grad()
def state_grows(model: nn.Module) -> bool:
    """Whether the model's state after two tokens holds more numbers than after one (a key-value cache does)."""
    if not has_state(model):
        raise ValueError(f"{type(model).__name__} has no init_state/step: it cannot carry a state between chunks")
    device = next(model.parameters()).device
    token = torch.zeros(1, dtype=torch.long, device=device)  # (B=1,)
    _, once = model.step(token, model.init_state(1))
    _, twice = model.step(token, once)
    return state_elements(twice) > state_elements(once)


def forward_chunk(model: nn.Module, tokens: torch.Tensor, state: Any) -> tuple[torch.Tensor, Any]:
    """tokens (B, C) from ``state`` -> logits (B, C, V) and the state after the chunk."""
    if hasattr(model, "forward_chunk"):
        return model.forward_chunk(tokens, state)
    logits = []
    for token_t in tokens.unbind(1):  # (B,) each
        logits_t, state = model.step(token_t, state)  # (B, V)
        logits.append(logits_t)
    return torch.stack(logits, dim=1), state  # (B, C, V)


def chunked_logits(model: nn.Module, tokens: torch.Tensor, chunk: int):
    """tokens (B, S) -> the logits (B, C, V) of each chunk of ``chunk`` tokens in order (the last may be shorter),
    each from the state the chunks before it left."""
    if chunk < 1:
        raise ValueError(f"chunk={chunk} must be >= 1")
    state = model.init_state(tokens.shape[0])
    for piece in tokens.split(chunk, dim=1):  # (B, C) each
        logits, state = forward_chunk(model, piece, state)
        yield logits
