"""Rotary position embeddings (Su et al. 2021) in the half-split layout of GPT-NeoX and HF Llama.

Each head's features are rotated in pairs (j, j + DH/2) by the angle position * theta^(-2j/DH). Meta's
reference code pairs neighbouring features (2j, 2j + 1) instead; the two are the same model up to a fixed
permutation of the q and k projection rows.
"""

import torch


def rotary_cos_sin(
    positions: torch.Tensor, head_dim: int, theta: float, dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor]:
    """positions (S,) -> cos, sin (S, DH) in ``dtype``; the angles are computed in float32 or, for float64, in float64."""
    compute_dtype = torch.float64 if dtype == torch.float64 else torch.float32
    exponents = torch.arange(0, head_dim, 2, dtype=compute_dtype, device=positions.device) / head_dim  # (DH/2,)
    inverse_frequencies = 1.0 / theta**exponents  # (DH/2,)
    angles = positions.to(compute_dtype)[:, None] * inverse_frequencies  # (S, DH/2)
    angles = torch.cat([angles, angles], dim=-1)  # (S, DH)
    return angles.cos().to(dtype), angles.sin().to(dtype)


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x (B, NH, S, DH), cos and sin (S, DH) -> x rotated, (B, NH, S, DH)"""
    first, second = x.chunk(2, dim=-1)  # (B, NH, S, DH/2) each
    rotated_half = torch.cat([-second, first], dim=-1)  # (B, NH, S, DH)
    return x * cos + rotated_half * sin
