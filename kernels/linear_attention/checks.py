"""Input checks shared by the linear-attention ops: they name the bad argument and come before any compute."""

import torch


def check_chunk_size(chunk_size) -> None:
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive int; got {chunk_size!r}")


def check_shape(name: str, tensor: torch.Tensor, expected: tuple) -> None:
    """``expected`` holds ints, or None for a free size."""
    shape = tuple(tensor.shape)
    if len(shape) != len(expected) or any(e is not None and s != e for s, e in zip(shape, expected)):
        readable = tuple("*" if e is None else e for e in expected)
        raise ValueError(f"{name} must have shape {readable}; got {shape}")


def check_heads(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, state: torch.Tensor | None, *, step: bool) -> None:
    """q, k (B, S, NH, DK) and v (B, S, NH, DV) for a sequence, (B, NH, DK|DV) for a step; state (B, NH, DK, DV)."""
    expected_dims = 3 if step else 4
    layout = "(B, NH, DK)" if step else "(B, S, NH, DK)"
    if q.dim() != expected_dims:
        raise ValueError(f"q must have shape {layout}; got {tuple(q.shape)}")
    check_shape("k", k, tuple(q.shape))
    check_shape("v", v, tuple(q.shape[:-1]) + (None,))
    if state is not None:
        B, NH, DK = q.shape[0], q.shape[-2], q.shape[-1]
        check_shape("state", state, (B, NH, DK, v.shape[-1]))
