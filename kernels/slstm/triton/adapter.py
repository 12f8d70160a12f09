"""Backend ``"triton"`` of op ``"slstm.scan"``: our arguments and results around the Triton scan.

The matmul dtype is the autocast dtype under autocast (as the reference's ``baddbmm`` runs there), else wx's dtype;
float64 (or any dtype but float32, bfloat16, float16) runs on the torch backend instead, with one warning per reason:
``auto`` picks this backend from the device alone, so a configuration that works on CPU keeps working on GPU.
Results: h (B, S, NH, DH) in the matmul dtype, the final state in float32.
"""

import math
import warnings

import torch

from kernels.backends import resolve
from kernels.slstm.scan import SLSTMState

MATMUL_DTYPES = (torch.float32, torch.bfloat16, torch.float16)

_warned: set[str] = set()


def matmul_dtype(wx: torch.Tensor) -> torch.dtype:
    """The dtype of the recurrent matmul's operands: the autocast dtype under autocast, else wx's."""
    device_type = wx.device.type
    return torch.get_autocast_dtype(device_type) if torch.is_autocast_enabled(device_type) else wx.dtype


def unsupported(wx: torch.Tensor) -> str | None:
    """Why the Triton scan cannot run these inputs, or None if it can."""
    dtype = matmul_dtype(wx)
    if dtype not in MATMUL_DTYPES:
        return f"matmul dtype {dtype} (the Triton scan takes {[str(d) for d in MATMUL_DTYPES]})"
    return None


def _torch_fallback(reason: str, device: torch.device):
    """The torch backend of the scan, warning once per reason."""
    if reason not in _warned:
        _warned.add(reason)
        warnings.warn(
            f"backend 'triton' cannot run slstm.scan with {reason}; using the torch backend",
            RuntimeWarning,
            stacklevel=2,
        )
    return resolve("slstm.scan", "torch", device)


def scan_triton(wx, R, b, state: SLSTMState, forget_gate: str, recurrent_grad_clip: float | None):
    """Same arguments and results as ``kernels.slstm.scan.scan_autograd`` (dtypes: see the module docstring)."""
    reason = unsupported(wx)
    if reason is not None:
        return _torch_fallback(reason, wx.device)(wx, R, b, state, forget_gate, recurrent_grad_clip)
    from kernels.slstm.triton.function import TritonSLSTMScan  # imports triton

    m0 = torch.where(state.n == 0, -math.inf, state.m.detach().float())  # (B, NH, DH): no history where n == 0
    h, *final_state = TritonSLSTMScan.apply(
        wx, R.to(matmul_dtype(wx)), b, state.h, state.c, state.n, m0, forget_gate, recurrent_grad_clip
    )
    return h, SLSTMState(*final_state)
