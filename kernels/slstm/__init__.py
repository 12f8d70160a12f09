"""sLSTM kernels: the stabilised sLSTM scan (op ``"slstm.scan"`` in ``kernels.backends``)."""

from kernels.slstm import (  # noqa: F401  (register the fused and torch.compile backends, the probe)
    compiled,
    fused,
    probe_cases,
    triton,  # noqa: F401  (registers backend "triton"; triton is imported on first use)
)
from kernels.slstm.scan import SLSTMState, initial_state, scan

__all__ = ["SLSTMState", "initial_state", "scan"]
