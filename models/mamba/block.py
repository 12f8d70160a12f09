"""Mamba mixer, pre-RMSNorm residual blocks and the Mamba backbone, initialised as ``mamba_ssm`` does."""

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from kernels.selective_scan import initial_state as empty_ssm_state
from kernels.selective_scan import selective_scan, selective_scan_step
from models.block_stack import through_blocks
from models.mamba.config import MambaConfig
from models.xlstm.components import CausalConv1d


class MambaLayerState(NamedTuple):
    conv: torch.Tensor  # (B, K-1, DI) last inputs of the causal convolution
    ssm: torch.Tensor  # (B, DI, N) state of the selective scan


class MambaMixer(nn.Module):
    """in_proj -> (conv + SiLU -> selective SSM) * SiLU(z) -> out_proj; (B, S, D) -> (B, S, D)."""

    def __init__(self, config: MambaConfig):
        super().__init__()
        self.config = config
        D, DI, N, R = config.embedding_dim, config.inner_dim, config.state_dim, config.resolved_dt_rank
        self.in_proj = nn.Linear(D, 2 * DI, bias=config.proj_bias)
        self.conv1d = CausalConv1d(DI, config.conv_kernel_size)
        self.x_proj = nn.Linear(DI, R + 2 * N, bias=False)
        self.dt_proj = nn.Linear(R, DI, bias=True)
        self.A_log = nn.Parameter(torch.empty(DI, N))
        self.D = nn.Parameter(torch.empty(DI))
        self.out_proj = nn.Linear(DI, D, bias=config.proj_bias)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """The reference init: PyTorch defaults for in/x projections and the conv, zero projection biases,
        dt_proj weights U(+-dt_scale / sqrt(R)) and bias softplus^-1(dt) with dt log-uniform in [dt_min, dt_max],
        S4D-real A = -(1..N), D = 1; out_proj rescaled by 1/sqrt(num_blocks) in the backbone."""
        config = self.config
        for linear in (self.in_proj, self.x_proj, self.out_proj):
            linear.reset_parameters()
            if linear.bias is not None:
                nn.init.zeros_(linear.bias)
        self.conv1d.reset_parameters()
        dt_init_std = config.resolved_dt_rank**-0.5 * config.dt_scale
        nn.init.uniform_(self.dt_proj.weight, -dt_init_std, dt_init_std)
        log_dt_min, log_dt_max = math.log(config.dt_min), math.log(config.dt_max)
        with torch.no_grad():
            dt = torch.exp(torch.rand(config.inner_dim) * (log_dt_max - log_dt_min) + log_dt_min)
            dt = dt.clamp(min=config.dt_init_floor)
            self.dt_proj.bias.copy_(dt + torch.log(-torch.expm1(-dt)))  # softplus^-1(dt)
            A = torch.arange(1, config.state_dim + 1, dtype=torch.float32)  # (N,): S4D-real A = -(1 .. N)
            self.A_log.copy_(torch.log(A).expand_as(self.A_log))
        nn.init.ones_(self.D)

    def _ssm_inputs(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """x (..., DI) -> dt (..., DI) after softplus, B and C (..., N)."""
        R, N = self.config.resolved_dt_rank, self.config.state_dim
        dt_low_rank, B, C = torch.split(self.x_proj(x), [R, N, N], dim=-1)
        return F.softplus(self.dt_proj(dt_low_rank)), B, C

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, S, D) -> (B, S, D)"""
        ssm_branch, gate = self.in_proj(x).chunk(2, dim=-1)  # (B, S, DI) each
        ssm_branch = F.silu(self.conv1d(ssm_branch))  # (B, S, DI)
        dt, B, C = self._ssm_inputs(ssm_branch)  # (B, S, DI), (B, S, N), (B, S, N)
        A = -torch.exp(self.A_log)  # (DI, N)
        y = selective_scan(
            ssm_branch, dt, A, B, C, self.D, chunk_size=self.config.chunk_size, backend=self.config.backend
        )  # (B, S, DI)
        return self.out_proj(y * F.silu(gate))

    def forward_chunk(self, x: torch.Tensor, state: MambaLayerState) -> tuple[torch.Tensor, MambaLayerState]:
        """x (B, C, D) from ``state`` -> (B, C, D) and the state after the chunk: the scan started from the state's
        SSM state, the convolution from its last inputs (one parallel pass)."""
        ssm_branch, gate = self.in_proj(x).chunk(2, dim=-1)  # (B, C, DI) each
        ssm_branch, conv_state = self.conv1d.forward_chunk(ssm_branch, state.conv)
        ssm_branch = F.silu(ssm_branch)  # (B, C, DI)
        dt, B, C = self._ssm_inputs(ssm_branch)  # (B, C, DI), (B, C, N), (B, C, N)
        A = -torch.exp(self.A_log)  # (DI, N)
        y, ssm_state = selective_scan(
            ssm_branch,
            dt,
            A,
            B,
            C,
            self.D,
            initial_state=state.ssm,
            return_state=True,
            chunk_size=self.config.chunk_size,
            backend=self.config.backend,
        )  # (B, C, DI)
        return self.out_proj(y * F.silu(gate)), MambaLayerState(conv_state, ssm_state)

    def init_state(self, batch: int) -> MambaLayerState:
        like = self.A_log
        conv = self.conv1d.init_state(batch, self.config.inner_dim, dtype=like.dtype, device=like.device)
        ssm = empty_ssm_state(batch, self.config.inner_dim, self.config.state_dim, dtype=like.dtype, device=like.device)
        return MambaLayerState(conv, ssm)

    def step(self, x_t: torch.Tensor, state: MambaLayerState) -> tuple[torch.Tensor, MambaLayerState]:
        """x_t (B, D) -> (B, D)"""
        ssm_branch, gate = self.in_proj(x_t).chunk(2, dim=-1)  # (B, DI) each
        ssm_branch, conv_state = self.conv1d.step(ssm_branch, state.conv)
        ssm_branch = F.silu(ssm_branch)  # (B, DI)
        dt, B, C = self._ssm_inputs(ssm_branch)  # (B, DI), (B, N), (B, N)
        A = -torch.exp(self.A_log)  # (DI, N)
        y, ssm_state = selective_scan_step(ssm_branch, dt, A, B, C, self.D, state.ssm)  # (B, DI)
        return self.out_proj(y * F.silu(gate)), MambaLayerState(conv_state, ssm_state)


class MambaBlock(nn.Module):
    """x + mixer(RMSNorm(x))"""

    def __init__(self, config: MambaConfig):
        super().__init__()
        self.norm = nn.RMSNorm(config.embedding_dim, eps=config.norm_eps)
        self.mixer = MambaMixer(config)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, S, D) -> (B, S, D)"""
        return x + self.mixer(self.norm(x))

    def forward_chunk(self, x: torch.Tensor, state: MambaLayerState) -> tuple[torch.Tensor, MambaLayerState]:
        """x (B, C, D) from ``state`` -> (B, C, D) and the state after the chunk"""
        y, state = self.mixer.forward_chunk(self.norm(x), state)
        return x + y, state

    def init_state(self, batch: int) -> MambaLayerState:
        return self.mixer.init_state(batch)

    def step(self, x_t: torch.Tensor, state: MambaLayerState) -> tuple[torch.Tensor, MambaLayerState]:
        """x_t (B, D) -> (B, D)"""
        y_t, state = self.mixer.step(self.norm(x_t), state)
        return x_t + y_t, state


class MambaBackbone(nn.Module):
    """The Mamba backbone: (B, S, D) -> (B, S, D), with a final RMSNorm after the blocks."""

    def __init__(self, config: MambaConfig):
        super().__init__()
        self.config = config
        self.blocks = nn.ModuleList(MambaBlock(config) for _ in range(config.num_blocks))
        self.final_norm = nn.RMSNorm(config.embedding_dim, eps=config.norm_eps)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Mixer init plus the reference's GPT-2 style rescaling of out_proj by 1/sqrt(num_blocks)."""
        for block in self.blocks:
            block.mixer.reset_parameters()
            block.norm.reset_parameters()
            with torch.no_grad():
                block.mixer.out_proj.weight.div_(math.sqrt(self.config.num_blocks))
        self.final_norm.reset_parameters()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return self.final_norm(x)

    def forward_chunk(
        self, x: torch.Tensor, state: list[MambaLayerState]
    ) -> tuple[torch.Tensor, list[MambaLayerState]]:
        """x (B, C, D) from ``state`` (one entry per block) -> (B, C, D) and the state after the chunk."""
        x, new_state = through_blocks(self.blocks, "forward_chunk", x, state)
        return self.final_norm(x), new_state

    def init_state(self, batch: int) -> list[MambaLayerState]:
        return [block.init_state(batch) for block in self.blocks]

    def step(self, x_t: torch.Tensor, state: list[MambaLayerState]) -> tuple[torch.Tensor, list[MambaLayerState]]:
        """x_t (B, D) -> (B, D); the state holds one entry per block."""
        x_t, new_state = through_blocks(self.blocks, "step", x_t, state)
        return self.final_norm(x_t), new_state
