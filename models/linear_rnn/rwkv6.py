"""RWKV-6 "Finch" (Peng et al. 2024): data-dependent token shift and decay, WKV with bonus, channel mix.

Structure as in flash-linear-attention's ``RWKV6Attention``/``RWKV6FeedForward``/``RWKV6Block``, which
follow the official RWKV-LM (x060) model, the implementation the paper used:

- time mix: delta = x_{t-1} - x_t; a shared low-rank (5 x 32) tanh projection of x + delta * maa_x
  gives data-dependent mixes ("ddlerp") for w, k, v, r, g; r, k, v, g projections; decay
  w = time_decay + LoRA_64(x_w) and log decay -exp(w); WKV with bonus u; GroupNorm per head;
  times swish(g); out-projection.
- channel mix: token-shift mixes for k and r; sigmoid(r) * value(relu(key(x_k))^2), key 3.5 D.
- block: LayerNorms with bias, x + time_mix(ln1 x), x + channel_mix(ln2 x); block 0 first applies ln0.

Hyperparameters are the official ones (head size 64, key dim = value dim = D, GroupNorm eps 64e-5,
RWKV-LM's initialisation); fla's defaults differ (key dim D / 2, 4 heads) and do not reproduce the
paper's counts, which the official key dim D does (Table spaj_peaklr).
"""

import torch
import torch.nn.functional as F
from torch import nn

from kernels.linear_attention import rwkv6, rwkv6_step
from models.linear_rnn.common import ResidualStack, token_shift
from models.linear_rnn.config import RWKV6Config

DDLERP_TARGETS = ("w", "k", "v", "r", "g")  # the five data-dependent token-shift mixes, official order


def _channel_ramp(dim: int, like: torch.Tensor) -> torch.Tensor:
    """0, 1/dim, ..., (dim-1)/dim: the official init's per-channel ramp."""
    return torch.arange(dim, dtype=like.dtype, device=like.device) / dim


def _orthogonal(linear: nn.Linear, scale: float) -> None:
    """RWKV-LM's init of a projection: orthogonal, gain scale * sqrt(out / in) if out > in; zeros at scale 0."""
    out_dim, in_dim = linear.weight.shape
    if scale == 0:
        nn.init.zeros_(linear.weight)
    else:
        nn.init.orthogonal_(linear.weight, gain=scale * (out_dim / in_dim) ** 0.5 if out_dim > in_dim else scale)


class TimeMix(nn.Module):
    """RWKV-6 time mixing: (B, S, D) -> (B, S, D); the state is the last input and the WKV memory."""

    def __init__(self, config: RWKV6Config, block_index: int):
        super().__init__()
        self.config, self.block_index = config, block_index
        D, DK, DV = config.embedding_dim, config.key_dim, config.value_dim
        rank, targets = config.proj_low_rank_dim, len(DDLERP_TARGETS)
        self.time_maa_x = nn.Parameter(torch.empty(D))
        self.time_maa = nn.Parameter(torch.empty(targets, D))  # static mixes for w, k, v, r, g
        self.time_maa_w1 = nn.Linear(D, targets * rank, bias=False)
        self.time_maa_w2 = nn.Parameter(torch.empty(targets, rank, D))
        self.time_decay = nn.Parameter(torch.empty(DK))
        self.time_decay_w1 = nn.Linear(D, config.gate_low_rank_dim, bias=False)
        self.time_decay_w2 = nn.Linear(config.gate_low_rank_dim, DK, bias=False)
        self.bonus = nn.Parameter(torch.empty(config.num_heads, config.head_size))  # u ("time_faaaa")
        self.receptance = nn.Linear(D, DK, bias=False)
        self.key = nn.Linear(D, DK, bias=False)
        self.value = nn.Linear(D, DV, bias=False)
        self.gate = nn.Linear(D, DV, bias=False)
        self.ln_x = nn.GroupNorm(config.num_heads, DV, eps=config.group_norm_eps)
        self.output = nn.Linear(DV, D, bias=False)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """RWKV-LM x060's initialisation, which depends on the block's depth."""
        config, like = self.config, self.time_decay
        depth = self.block_index / max(config.num_blocks - 1, 1)  # 0 to 1
        remaining = 1.0 - self.block_index / config.num_blocks  # 1 to almost 0
        with torch.no_grad():
            ramp = _channel_ramp(config.embedding_dim, like)
            self.time_maa_x.copy_(1 - ramp**remaining)
            w, k, v, r, g = (
                1 - ramp**remaining,
                1 - ramp**remaining,
                1 - (ramp**remaining + 0.3 * depth),
                1 - ramp ** (0.5 * remaining),
                1 - ramp ** (0.5 * remaining),
            )
            self.time_maa.copy_(torch.stack([w, k, v, r, g]))
            nn.init.zeros_(self.time_maa_w1.weight)
            nn.init.uniform_(self.time_maa_w2, -0.01, 0.01)
            key_ramp = torch.arange(config.key_dim, dtype=like.dtype, device=like.device) / max(config.key_dim - 1, 1)
            self.time_decay.copy_(-6 + 5 * key_ramp ** (0.7 + 1.3 * depth))
            nn.init.zeros_(self.time_decay_w1.weight)
            nn.init.uniform_(self.time_decay_w2.weight, -0.01, 0.01)
            zigzag = ((torch.arange(config.key_dim, device=like.device) + 1) % 3 - 1).to(like.dtype) * 0.1
            self.bonus.copy_((depth * (1 - key_ramp) + zigzag).reshape(self.bonus.shape))
            for linear, scale in (
                (self.receptance, 1.0),
                (self.key, 0.1),
                (self.value, 1.0),
                (self.gate, 0.1),
                (self.output, 0.0),
            ):
                _orthogonal(linear, scale)
            nn.init.constant_(self.ln_x.weight, ((1 + self.block_index) / config.num_blocks) ** 0.7)
            nn.init.zeros_(self.ln_x.bias)

    def _mix(self, x: torch.Tensor, shifted: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """x, shifted (B, S, D) -> r, k, log decay (B, S, NH, DK/NH); v, swish gate (B, S, NH, DV/NH)."""
        delta = shifted - x  # (B, S, D)
        low_rank = torch.tanh(self.time_maa_w1(x + delta * self.time_maa_x)).unflatten(-1, (len(DDLERP_TARGETS), -1))
        mixes = torch.einsum("bsnr,nrd->bsnd", low_rank, self.time_maa_w2) + self.time_maa  # (B, S, 5, D)
        x_w, x_k, x_v, x_r, x_g = (x + delta * mix for mix in mixes.unbind(2))
        raw_decay = self.time_decay + self.time_decay_w2(torch.tanh(self.time_decay_w1(x_w)))  # (B, S, DK)
        heads = lambda t: t.unflatten(-1, (self.config.num_heads, -1))  # noqa: E731
        return (
            heads(self.receptance(x_r)),
            heads(self.key(x_k)),
            heads(-torch.exp(raw_decay)),
            heads(self.value(x_v)),
            heads(F.silu(self.gate(x_g))),
        )

    def _output(self, o: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
        """o, gate (B, S, NH, DV/NH) -> (B, S, D)"""
        leading = o.shape[:-2]
        normed = F.group_norm(
            o.reshape(-1, self.config.value_dim), self.config.num_heads, self.ln_x.weight, self.ln_x.bias, self.ln_x.eps
        ).reshape(*leading, -1)
        return self.output(normed * gate.flatten(-2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        r, k, log_decay, v, gate = self._mix(x, token_shift(x))
        o = rwkv6(r, k, v, log_decay, self.bonus, chunk_size=self.config.chunk_size, backend=self.config.backend)
        return self._output(o, gate)

    def init_state(self, batch: int) -> dict[str, torch.Tensor]:
        like, config = self.time_decay, self.config
        DV = config.value_dim // config.num_heads
        return {
            "shift": torch.zeros(batch, config.embedding_dim, dtype=like.dtype, device=like.device),
            "wkv": torch.zeros(batch, config.num_heads, config.head_size, DV, dtype=like.dtype, device=like.device),
        }

    def step(self, x_t: torch.Tensor, state: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        r, k, log_decay, v, gate = self._mix(x_t[:, None], state["shift"][:, None])  # (B, 1, NH, *)
        o_t, wkv = rwkv6_step(
            r[:, 0], k[:, 0], v[:, 0], log_decay[:, 0], self.bonus, state["wkv"], backend=self.config.backend
        )
        return self._output(o_t[:, None], gate)[:, 0], {"shift": x_t, "wkv": wkv}


class ChannelMix(nn.Module):
    """RWKV-6 channel mixing: sigmoid(r) * value(relu(key(x_k))^2); the state is the last input."""

    def __init__(self, config: RWKV6Config, block_index: int):
        super().__init__()
        self.config, self.block_index = config, block_index
        D = config.embedding_dim
        self.time_maa_k = nn.Parameter(torch.empty(D))
        self.time_maa_r = nn.Parameter(torch.empty(D))
        self.key = nn.Linear(D, config.ffn_dim, bias=False)
        self.receptance = nn.Linear(D, D, bias=False)
        self.value = nn.Linear(config.ffn_dim, D, bias=False)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        remaining = 1.0 - self.block_index / self.config.num_blocks
        with torch.no_grad():
            ramp = _channel_ramp(self.config.embedding_dim, self.time_maa_k)
            self.time_maa_k.copy_(1 - ramp**remaining)
            self.time_maa_r.copy_(1 - ramp**remaining)
            for linear, scale in ((self.key, 1.0), (self.receptance, 0.0), (self.value, 0.0)):
                _orthogonal(linear, scale)

    def _mix(self, x: torch.Tensor, shifted: torch.Tensor) -> torch.Tensor:
        delta = shifted - x  # (..., D)
        key = torch.relu(self.key(x + delta * self.time_maa_k)) ** 2
        return torch.sigmoid(self.receptance(x + delta * self.time_maa_r)) * self.value(key)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._mix(x, token_shift(x))

    def step(self, x_t: torch.Tensor, shift: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self._mix(x_t, shift), x_t


class RWKV6Block(nn.Module):
    """x + time_mix(ln1 x), then x + channel_mix(ln2 x); block 0 first normalises its input (ln0)."""

    def __init__(self, config: RWKV6Config, block_index: int):
        super().__init__()
        D, eps = config.embedding_dim, config.norm_eps
        self.ln0 = nn.LayerNorm(D, eps=eps) if block_index == 0 else nn.Identity()
        self.ln1, self.ln2 = nn.LayerNorm(D, eps=eps), nn.LayerNorm(D, eps=eps)
        self.time_mix = TimeMix(config, block_index)
        self.channel_mix = ChannelMix(config, block_index)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, S, D) -> (B, S, D)"""
        x = self.ln0(x)
        x = x + self.time_mix(self.ln1(x))
        return x + self.channel_mix(self.ln2(x))

    def init_state(self, batch: int) -> dict:
        like = self.ln1.weight
        shift = torch.zeros(batch, like.shape[0], dtype=like.dtype, device=like.device)
        return {"time_mix": self.time_mix.init_state(batch), "channel_mix": shift}

    def step(self, x_t: torch.Tensor, state: dict) -> tuple[torch.Tensor, dict]:
        """x_t (B, D) -> (B, D)"""
        x_t = self.ln0(x_t)
        y_t, time_mix_state = self.time_mix.step(self.ln1(x_t), state["time_mix"])
        x_t = x_t + y_t
        y_t, channel_mix_state = self.channel_mix.step(self.ln2(x_t), state["channel_mix"])
        return x_t + y_t, {"time_mix": time_mix_state, "channel_mix": channel_mix_state}


class RWKV6Stack(ResidualStack):
    """The RWKV-6 backbone: (B, S, D) -> (B, S, D), blocks then the final LayerNorm (ln_out)."""

    def __init__(self, config: RWKV6Config):
        blocks = [RWKV6Block(config, index) for index in range(config.num_blocks)]
        super().__init__(blocks, nn.LayerNorm(config.embedding_dim, eps=config.norm_eps))
        self.config = config
