"""H3 (Fu et al. 2023, "Hungry Hungry Hippos"): a shift SSM on K, a diagonal SSM on K*V, gating with Q.

Per head of ``head_dim`` channels: ``k' = shift_ssm(k)``, ``y = q * diag_ssm(k' v^T)`` (the outer product within
the head; with head_dim 1 all elementwise), then an output projection. Both SSMs run as causal convolutions with
their kernels during forward (FFT) and as recurrences in ``step``: the shift SSM keeps the last ``state_dim``
inputs, the diagonal SSM a complex state of ``state_dim / 2`` modes per channel; state size is constant.

Facts from the reference (HazyResearch/H3 ``src/models/ssm``; the same code in safari and zoology):
- shift SSM: A shifts the state by one, ``B`` (init e_1) and ``C`` (init as a Conv1d weight, U(+-1/sqrt(N))) are
  trained, kernel ``k[l] = sum_m B[m] C[m + l]`` for l < N, plus a skip ``D * u`` (init N(0, 1)).
- diagonal SSM (S4D, ``mode=diag``, ``measure=diag-lin``): N/2 complex modes per channel, A = -1/2 + i pi n,
  B = 1, C ~ complex N(0, 1), dt log-uniform in [1e-3, 1e-1], bilinear discretisation, kernel
  ``K[l] = 2 Re(sum_n C_n dB_n dA_n^l)``, plus a skip ``D * u`` (init N(0, 1)).
- ``d_state = 64``, ``head_dim = 1``; q, k, v and output projections with biases; the head outputs are laid out
  head-dim major (``(d h)``). The reference's output projection (``output_linear``) is not depth-rescaled at init.
SSM parameters are named so the shared weight-decay rule leaves them undecayed, as the reference does.
"""

import math

import torch
from torch import nn

from kernels.long_conv import causal_conv
from models.ssm_conv.common import ResidualBlock, ResidualStack, gpt2_init
from models.ssm_conv.config import H3Config


class ShiftSSM(nn.Module):
    """x_t = shift(x_{t-1}) + B u_t, y_t = C x_t + D u_t per channel: a trainable length-N causal filter."""

    def __init__(self, channels: int, state_dim: int, config: H3Config):
        super().__init__()
        self.config = config
        self.B = nn.Parameter(torch.zeros(channels, state_dim))
        self.C = nn.Parameter(torch.empty(channels, state_dim))
        self.skip = nn.Parameter(torch.empty(channels))
        with torch.no_grad():
            self.B[:, 0] = 1.0
            nn.init.uniform_(self.C, -1 / math.sqrt(state_dim), 1 / math.sqrt(state_dim))
            nn.init.normal_(self.skip)

    def kernel(self) -> torch.Tensor:
        """(N, channels): k[l] = sum_m B[m] C[m + l]."""
        N = self.C.shape[1]
        windows = nn.functional.pad(self.C, (0, N)).unfold(-1, N, 1)[:, :N]  # (channels, N lags, N)
        return torch.einsum("clm,cm->lc", windows, self.B)

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        """(B, S, channels) -> (B, S, channels)"""
        y = causal_conv(u, self.kernel(), method=self.config.conv_method, backend=self.config.backend)
        return y + self.skip * u

    def init_state(self, batch: int) -> torch.Tensor:
        return self.B.new_zeros(batch, *self.B.shape)  # (B, channels, N)

    def step(self, u_t: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """u_t (B, channels), state (B, channels, N) -> y_t (B, channels), new state."""
        state = torch.cat([torch.zeros_like(state[..., :1]), state[..., :-1]], dim=-1) + self.B * u_t[..., None]
        return (state * self.C).sum(-1) + self.skip * u_t, state


class DiagonalSSM(nn.Module):
    """S4D with bilinear discretisation: x_t = dA x_{t-1} + dB u_t, y_t = 2 Re(C x_t) + D u_t per channel."""

    def __init__(self, channels: int, state_dim: int, config: H3Config):
        super().__init__()
        self.config = config
        modes = state_dim // 2
        self.log_dt = nn.Parameter(torch.empty(channels))
        self.log_A_real = nn.Parameter(torch.full((channels, modes), math.log(0.5)))
        self.A_imag = nn.Parameter(math.pi * torch.arange(modes, dtype=torch.float32).repeat(channels, 1))
        self.B = nn.Parameter(torch.zeros(channels, modes, 2))  # complex as (real, imag)
        self.C = nn.Parameter(torch.empty(channels, modes, 2))
        self.skip = nn.Parameter(torch.empty(channels))
        with torch.no_grad():
            self.B[..., 0] = 1.0
            log_dt_min, log_dt_max = math.log(config.dt_min), math.log(config.dt_max)
            nn.init.uniform_(self.log_dt, log_dt_min, log_dt_max)
            nn.init.normal_(self.C, std=math.sqrt(0.5))  # complex standard normal
            nn.init.normal_(self.skip)

    def discretize(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """dA, dB, C, each (channels, N / 2) complex."""
        dt = torch.exp(self.log_dt)[:, None]  # (channels, 1)
        dt_A = torch.complex(-torch.exp(self.log_A_real), self.A_imag) * dt  # (channels, N / 2)
        dA = (1 + dt_A / 2) / (1 - dt_A / 2)
        dB = torch.view_as_complex(self.B) * dt / (1 - dt_A / 2)
        return dA, dB, torch.view_as_complex(self.C)

    def kernel(self, length: int) -> torch.Tensor:
        """(length, channels): K[l] = 2 Re(sum_n C_n dB_n dA_n^l)."""
        dA, dB, C = self.discretize()
        exponents = torch.arange(length, device=dA.device, dtype=self.log_dt.dtype)  # (L,)
        powers = torch.exp(torch.log(dA)[..., None] * exponents)  # (channels, N / 2, L)
        return 2 * torch.einsum("cn,cnl->lc", C * dB, powers).real

    def forward(self, u: torch.Tensor, copies: int = 1) -> torch.Tensor:
        """(B, S, copies * channels) -> same; each group of ``channels`` shares the kernel (H3's heads)."""
        kernel = self.kernel(u.shape[1]).repeat(1, copies)  # (S, copies * channels)
        y = causal_conv(u, kernel, method=self.config.conv_method, backend=self.config.backend)
        return y + self.skip.repeat(copies) * u

    def init_state(self, batch: int, copies: int) -> torch.Tensor:
        dtype = torch.promote_types(self.log_dt.dtype, torch.complex64)
        return torch.zeros(batch, copies, *self.A_imag.shape, dtype=dtype, device=self.log_dt.device)

    def step(self, u_t: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """u_t (B, copies, channels), state (B, copies, channels, N / 2) -> y_t (B, copies, channels), new state."""
        dA, dB, C = self.discretize()
        state = dA * state + dB * u_t[..., None]
        return 2 * (C * state).sum(-1).real + self.skip * u_t, state


class H3Layer(nn.Module):
    """H3 mixer: (B, S, D) -> (B, S, D); ``step`` in constant memory."""

    def __init__(self, config: H3Config):
        super().__init__()
        D, d = config.embedding_dim, config.head_dim
        self.head_dim, self.num_heads = d, D // d
        self.q_proj, self.k_proj, self.v_proj = (nn.Linear(D, D) for _ in range(3))
        self.shift_ssm = ShiftSSM(D, config.state_dim, config)
        self.diag_ssm = DiagonalSSM(self.num_heads, config.state_dim, config)
        self.out_proj = nn.Linear(D, D)

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        """(..., D) -> (..., d, H): channel h * d + i goes to [i, h]."""
        return x.unflatten(-1, (self.num_heads, self.head_dim)).transpose(-1, -2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, S, D) -> (B, S, D)"""
        q, k, v = self._heads(self.q_proj(x)), self.shift_ssm(self.k_proj(x)), self._heads(self.v_proj(x))
        kv = self._heads(k)[..., :, None, :] * v[..., None, :, :]  # (B, S, d, d, H)
        y = self.diag_ssm(kv.flatten(2), copies=self.head_dim**2).view_as(kv)  # (B, S, d, d, H)
        y = (q[..., :, None, :] * y).sum(2)  # (B, S, d, H)
        return self.out_proj(y.flatten(2))  # head-dim major: (d h)

    def init_state(self, batch: int) -> dict[str, torch.Tensor]:
        return {"shift": self.shift_ssm.init_state(batch), "diag": self.diag_ssm.init_state(batch, self.head_dim**2)}

    def step(self, x_t: torch.Tensor, state: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """x_t (B, D) -> (B, D)"""
        k, shift_state = self.shift_ssm.step(self.k_proj(x_t), state["shift"])
        q, k, v = self._heads(self.q_proj(x_t)), self._heads(k), self._heads(self.v_proj(x_t))
        kv = k[:, :, None, :] * v[:, None, :, :]  # (B, d, d, H)
        y, diag_state = self.diag_ssm.step(kv.flatten(1, 2), state["diag"])  # (B, d * d, H)
        y = (q[:, :, None, :] * y.view_as(kv)).sum(1)  # (B, d, H)
        return self.out_proj(y.flatten(1)), {"shift": shift_state, "diag": diag_state}


class H3Stack(ResidualStack):
    """The H3 backbone: (B, S, D) -> (B, S, D); blocks of H3 layer + GeLU MLP, a final LayerNorm, GPT-2 init."""

    def __init__(self, config: H3Config):
        blocks = [
            ResidualBlock(H3Layer(config), config.embedding_dim, config.mlp_factor, config.norm_eps)
            for _ in range(config.num_blocks)
        ]
        super().__init__(config, blocks)
        gpt2_init(self, config.init_std, rescaled=[block.mlp.down_proj for block in self.blocks])
