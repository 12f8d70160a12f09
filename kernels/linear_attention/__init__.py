"""Linear attention and linear RNN ops: GLA, retention (RetNet), HGRN, HGRN2 and RWKV-6's WKV.

Every op is a decayed outer-product (or, for HGRN, elementwise) recurrence with a chunkwise-parallel
torch form (``kernels.linear_attention.chunkwise``) for training and a one-step form for inference.
Multi-head ops take (B, S, NH, D) tensors and keep a state (B, NH, DK, DV); HGRN takes (B, S, D).
Backends: ``"torch"`` everywhere and, on CUDA with flash-linear-attention installed, ``"fla"``.
"""

from kernels.linear_attention import fla_backend, probe_cases  # noqa: F401  (register the optional backend, the probes)
from kernels.linear_attention.gla import gla, gla_step
from kernels.linear_attention.hgrn import hgrn, hgrn_step
from kernels.linear_attention.hgrn2 import hgrn2, hgrn2_step
from kernels.linear_attention.retention import retention, retention_step, retnet_log_decays
from kernels.linear_attention.rwkv6 import rwkv6, rwkv6_step

__all__ = [
    "gla",
    "gla_step",
    "hgrn",
    "hgrn_step",
    "hgrn2",
    "hgrn2_step",
    "retention",
    "retention_step",
    "retnet_log_decays",
    "rwkv6",
    "rwkv6_step",
]
