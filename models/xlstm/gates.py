"""The mLSTM's scalar input and forget gates, one per head, with the options of the gating ablation (Table
ablstudies, bottom): input dependent or not, learnable bias or a fixed one, and the bias initialisation."""

import math

import torch
import torch.nn.functional as F
from torch import nn

from models.xlstm.init import linspace_

BIAS_INITS = {
    "linspace": lambda bias: linspace_(bias, 3.0, 6.0),  # equidistant in [3, 6] over the heads
    "infinity": lambda bias: nn.init.constant_(bias, math.inf),  # a sigmoid forget gate of exactly one
    "normal": lambda bias: nn.init.normal_(bias, mean=0.0, std=0.1),
    "zeros": nn.init.zeros_,
}


class HeadGate(nn.Module):
    """A gate's pre-activation per head: w^T x + b, or b alone when the gate is not input dependent (then it has no
    weight); b a parameter, or a buffer that no optimiser changes when the bias is not learnable. Its layer calls
    reset_parameters."""

    def __init__(self, in_features: int, num_heads: int, input_dependent: bool, learnable_bias: bool, bias_init: str):
        super().__init__()
        self.bias_init = bias_init
        self.weight = nn.Parameter(torch.empty(num_heads, in_features)) if input_dependent else None  # (NH, in)
        if input_dependent:
            # the random draws of nn.Linear(in_features, num_heads), which an input-dependent gate was before the
            # ablation options (reset_parameters overwrites them): a seed keeps giving the initial weights of the
            # runs recorded before, in every module built after this gate
            nn.Linear(in_features, num_heads, device=self.weight.device)
        bias = torch.empty(num_heads)  # (NH,)
        if learnable_bias:
            self.bias = nn.Parameter(bias)
        else:
            self.register_buffer("bias", bias)

    def reset_parameters(self) -> None:
        if self.weight is not None:
            nn.init.zeros_(self.weight)
        with torch.no_grad():
            BIAS_INITS[self.bias_init](self.bias)


def gate_preactivations(inputs: list[torch.Tensor], gates: list[HeadGate]) -> list[torch.Tensor]:
    """The gates' input in consecutive feature parts, each (B, S, in_p) -> each gate's pre-activation (B, NH, S).

    The input-dependent gates share one matmul per part (half the backward passes over the input of one per gate), and
    the parts are never concatenated: the mLSTM's gates read [q, k, v], and a concatenation would copy them and keep
    the copy for the backward beside the q, k, v that a kernel reading them in place keeps (our Triton kernel; the
    CPU torch kernel keeps chunked copies of its own). The other gates are their bias at every step; under autocast
    the parts' products are summed in its dtype."""
    B, S, _ = inputs[0].shape
    dependent = [gate for gate in gates if gate.weight is not None]
    computed = iter([])
    if dependent:
        weight = torch.cat([gate.weight for gate in dependent])  # (k NH, in)
        bias = torch.cat([gate.bias for gate in dependent])  # (k NH,)
        weights = weight.split([x.shape[-1] for x in inputs], dim=1)  # (k NH, in_p) each
        preactivation = F.linear(inputs[0], weights[0], bias)  # (B, S, k NH)
        for x, part_weight in zip(inputs[1:], weights[1:]):
            preactivation = preactivation + F.linear(x, part_weight)
        computed = iter(preactivation.transpose(1, 2).chunk(len(dependent), dim=1))  # (B, NH, S) each
    return [
        next(computed) if gate.weight is not None else gate.bias.to(inputs[0].dtype)[None, :, None].expand(B, -1, S)
        for gate in gates
    ]
