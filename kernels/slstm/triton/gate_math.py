"""Elementwise gate math shared by the forward and backward Triton kernels of the sLSTM scan (float32 tensors).

Plain ``tl.exp``/``tl.log`` formulas, no libdevice intrinsics: the same code runs compiled (Triton 3.6 and later)
and under ``TRITON_INTERPRET=1``.
"""

import triton
import triton.language as tl


@triton.jit
def tanh(x):
    """tanh(x) = sign(x) (1 - e) / (1 + e) with e = exp(-2 |x|) in (0, 1]: nothing overflows."""
    e = tl.exp(-2.0 * tl.abs(x))
    magnitude = (1.0 - e) / (1.0 + e)
    return tl.where(x < 0, -magnitude, magnitude)


@triton.jit
def log_forget(f_tilde, FORGET_EXP: tl.constexpr):
    """log f: f~ itself for the exponential forget gate, logsigmoid(f~) = min(f~, 0) - log(1 + exp(-|f~|)) else."""
    if FORGET_EXP:
        return f_tilde
    else:
        return tl.minimum(f_tilde, 0.0) - tl.log(1.0 + tl.exp(-tl.abs(f_tilde)))


@triton.jit
def dlog_forget(f_tilde, FORGET_EXP: tl.constexpr):
    """d log f / d f~: 1 for the exponential forget gate, sigmoid(-f~) for the sigmoid one."""
    if FORGET_EXP:
        return tl.full(f_tilde.shape, 1.0, tl.float32)
    else:
        return tl.sigmoid(-f_tilde)
