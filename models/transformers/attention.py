"""Causal multi-head self-attention with a key-value cache for recurrent stepping: a growing one (each step appends
its position) or a static one (Figure inference_time_generation's Llama: buffers for a fixed number of positions,
allocated once and written in place, so that a step copies nothing and the memory is known before decoding)."""

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from models.transformers.rotary import apply_rotary, rotary_cos_sin


class KVCache(NamedTuple):
    keys: torch.Tensor  # (B, NH, T, DH), rotary already applied
    values: torch.Tensor  # (B, NH, T, DH)

    @property
    def length(self) -> int:
        """Positions held: the position of the next token."""
        return self.keys.shape[2]


class StaticKVCache(NamedTuple):
    keys: torch.Tensor  # (B, NH, capacity, DH), rotary already applied; positions >= length unwritten
    values: torch.Tensor  # (B, NH, capacity, DH)
    length: int  # positions written: the position of the next token


class CausalSelfAttention(nn.Module):
    """Scaled dot-product attention over the past; rotary positions on q and k when ``rope_theta`` is given.

    q, k and v have separate projections (features head after head): on CPU that is faster than one fused
    projection, whose q, k, v slices are strided. The configs check that ``num_heads`` divides ``embedding_dim``
    and, with rotary positions, leaves an even head dim."""

    def __init__(self, embedding_dim: int, num_heads: int, *, bias: bool, rope_theta: float | None = None):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = embedding_dim // num_heads
        self.rope_theta = rope_theta
        self.q_proj = nn.Linear(embedding_dim, embedding_dim, bias=bias)
        self.k_proj = nn.Linear(embedding_dim, embedding_dim, bias=bias)
        self.v_proj = nn.Linear(embedding_dim, embedding_dim, bias=bias)
        self.out_proj = nn.Linear(embedding_dim, embedding_dim, bias=bias)

    def _project(self, x: torch.Tensor, start: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """x (B, S, D) at positions start.. -> q, k, v (B, NH, S, DH)"""
        B, S, _ = x.shape
        q, k, v = (
            projection(x).view(B, S, self.num_heads, self.head_dim).transpose(1, 2)  # (B, NH, S, DH)
            for projection in (self.q_proj, self.k_proj, self.v_proj)
        )
        if self.rope_theta is not None:
            positions = torch.arange(start, start + S, device=x.device)  # (S,)
            cos, sin = rotary_cos_sin(positions, self.head_dim, self.rope_theta, q.dtype)  # (S, DH)
            q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        return q, k, v

    def _merge_heads(self, h: torch.Tensor) -> torch.Tensor:
        """(B, NH, S, DH) -> (B, S, D)"""
        B, _, S, _ = h.shape
        return self.out_proj(h.transpose(1, 2).reshape(B, S, -1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, S, D) -> (B, S, D)"""
        q, k, v = self._project(x, start=0)
        return self._merge_heads(F.scaled_dot_product_attention(q, k, v, is_causal=True))

    def init_state(self, batch: int) -> KVCache:
        empty = self.k_proj.weight.new_zeros(batch, self.num_heads, 0, self.head_dim)  # (B, NH, 0, DH)
        return KVCache(empty, empty)

    def init_static_state(self, batch: int, capacity: int) -> StaticKVCache:
        buffer = self.k_proj.weight.new_zeros(batch, self.num_heads, capacity, self.head_dim)  # (B, NH, cap, DH)
        return StaticKVCache(buffer, torch.zeros_like(buffer), 0)

    def step(self, x_t: torch.Tensor, cache: KVCache | StaticKVCache) -> tuple[torch.Tensor, KVCache | StaticKVCache]:
        """x_t (B, D) -> (B, D); the cache holds one more position (a static one past its capacity: IndexError)."""
        q, k, v = self._project(x_t.unsqueeze(1), start=cache.length)  # (B, NH, 1, DH) each
        if isinstance(cache, StaticKVCache):
            if cache.length == cache.keys.shape[2]:
                raise IndexError(f"the static key-value cache holds {cache.length} positions, all written")
            cache.keys[:, :, cache.length] = k[:, :, 0]
            cache.values[:, :, cache.length] = v[:, :, 0]
            cache = StaticKVCache(cache.keys, cache.values, cache.length + 1)
            keys, values = (
                cache.keys[:, :, : cache.length],
                cache.values[:, :, : cache.length],
            )  # (B, NH, T+1, DH) views
        else:
            cache = KVCache(torch.cat([cache.keys, k], dim=2), torch.cat([cache.values, v], dim=2))  # (B, NH, T+1, DH)
            keys, values = cache.keys, cache.values
        h = F.scaled_dot_product_attention(q, keys, values)  # (B, NH, 1, DH): one query sees all past
        return self._merge_heads(h)[:, 0], cache
