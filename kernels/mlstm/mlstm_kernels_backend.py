"""Optional backend ``"mlstm_kernels"``: NX-AI's mLSTM kernels (``mlstm_kernels==2.0.6``) behind our ops.

On CUDA, ``auto`` runs ``"mlstm.chunkwise"`` on the TFLA Triton kernel (``chunkwise--triton_xl_chunk``) and
``"mlstm.step"`` on its Triton step kernel. The adapter functions take the kernel's name, so the CPU tests
route the same code to the package's native torch kernels (``chunkwise--native_autograd``, ``native``).
The package is imported lazily: importing the suite never needs it.

Conventions translated here (ours -> theirs):

- scaling: we scale k by 1/sqrt(DH), they scale q; h is the same, their C and n are sqrt(DH) times ours.
- state: same orientation (C key dim first, (B, NH, DH, DH)); their m is (B, NH, 1), ours (B, NH).
- empty state: ours is C = n = 0, m = -inf; theirs C = n = 0, m = 0 (the same true state exp(m) (C, n) = 0).
  An entry of a given state with m = -inf is passed as C = n = 0, m = 0.
- forget gate: they always take log f = logsigmoid(f); ``forget_gate="exp"`` falls back to torch.
- sequence length: TFLA needs S a multiple of 16, a power of two below 128 and a multiple of the chunk size
  above; S is padded at the end with steps that keep the state (q = k = v = 0, forget gate 1, input gate 0),
  whose outputs are dropped, so any S works.

Differences that remain:

- eps: all kernels here compute ``max(|q n|, exp(-m)) + eps`` with the eps we pass, but the stabiliser m
  only cancels for eps = 0: h = q C_true / (max(|q n_true|, 1) + eps exp(m)). Their empty state (m = 0
  instead of -inf) and TFLA's floor of -10 on the stabiliser of h raise m only where it is <= 0, so h
  changes by at most eps relative (measured on CPU: 2e-8).
- gradients: ``chunkwise--native_autograd`` (the CPU tests) differentiates through m where we detach it;
  with eps > 0 its i and f gradients differ from ours by O(eps exp(m)) relative (measured: 3e-6 for unit
  gates; more for large input gates), and with eps = 0 everything agrees to rounding. TFLA's backward
  (like ``chunkwise--native_custbw``) treats the normaliser as a constant and returns no gradient for the
  initial n: its v gradient is ours, and its q, k, i, f, C0 gradients are ours whenever the loss sees h
  only through a function blind to the scale of each (batch, head, step) vector of h, such as the mLSTM
  layer's head-wise norm (up to that norm's eps); for other losses they differ.
- state dtype: the returned state is float32 (float64 for float64 inputs), whatever the input dtype.

Inputs a kernel cannot take (dtype, head dim, chunk size, forget gate) run on the torch backend instead,
with one warning per reason: ``auto`` picks this backend from the device alone, so a configuration that
works on CPU keeps working on GPU.
"""

import functools
import importlib.util
import math
import warnings

import torch

from kernels.backends import register, resolve
from kernels.mlstm.chunking import pad_time
from kernels.mlstm.gates import MLSTMState

TRITON_CHUNKWISE_KERNEL = "chunkwise--triton_xl_chunk"
TRITON_STEP_KERNEL = "triton"
NATIVE_CHUNKWISE_KERNEL = "chunkwise--native_autograd"
NATIVE_STEP_KERNEL = "native"

_TRITON_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
_NATIVE_DTYPES = _TRITON_DTYPES + (torch.float64,)
_MIN_LENGTH = 16  # TFLA: S must be a multiple of 16 (Triton's smallest matmul tile)
_LONG_LENGTH = 128  # TFLA: below this S must be a power of two (one chunk of S steps)
_PAD_FORGET = 100.0  # logsigmoid(100) = -4e-44: a padded step keeps the state (forget gate 1) ...
_PAD_INPUT = -1e4  # ... and adds nothing (input gate exp(-1e4 - m) = 0, k = v = 0)

_warned: set[str] = set()


@functools.cache
def _package_present() -> bool:
    return importlib.util.find_spec("mlstm_kernels") is not None and importlib.util.find_spec("triton") is not None


def _available(device: torch.device) -> bool:
    return device.type == "cuda" and _package_present()


def _is_triton(kernel: str) -> bool:
    return "triton" in kernel


def _is_power_of_two(x: int) -> bool:
    return x > 0 and x & (x - 1) == 0


def _unsupported(kernel: str, q: torch.Tensor, forget_gate: str, chunk_size: int | None = None) -> str | None:
    """Why ``kernel`` cannot run these inputs, or None if it can."""
    dtypes = _TRITON_DTYPES if _is_triton(kernel) else _NATIVE_DTYPES
    DH = q.shape[-1]
    if forget_gate != "sigmoid":
        return f"forget_gate={forget_gate!r} (mlstm_kernels supports only 'sigmoid')"
    if q.dtype not in dtypes:
        return f"dtype {q.dtype} (kernel {kernel!r} supports {[str(d) for d in dtypes]})"
    if _is_triton(kernel) and not (DH >= 16 and (_is_power_of_two(DH) or DH % 64 == 0)):
        return f"head dim {DH} (Triton kernels need a power of two >= 16 or a multiple of 64)"
    if chunk_size is not None and not (chunk_size >= _MIN_LENGTH and _is_power_of_two(chunk_size)):
        return f"chunk_size={chunk_size} (mlstm_kernels needs a power of two >= {_MIN_LENGTH}: 16, 32, 64, 128, ...)"
    return None


def _torch_fallback(op: str, reason: str, device: torch.device):
    """The torch backend of ``op``, warning once per reason."""
    if reason not in _warned:
        _warned.add(reason)
        warnings.warn(
            f"backend 'mlstm_kernels' cannot run {op} with {reason}; using the torch backend",
            RuntimeWarning,
            stacklevel=2,
        )
    return resolve(op, "torch", device)


def _state_dtype(dtype: torch.dtype) -> torch.dtype:
    """Their kernels keep states in float32; float64 inputs keep float64 states (native kernels only)."""
    return torch.promote_types(dtype, torch.float32)


def _state_to_theirs(state: MLSTMState, head_dim: int, dtype: torch.dtype):
    """Our state -> their (C (B, NH, DH, DH), n (B, NH, DH), m (B, NH, 1)); entries with m = -inf become 0, 0, 0."""
    C, n, m = state
    empty = torch.isneginf(m)  # (B, NH) no history: the true state exp(m) (C, n) is 0
    scale = math.sqrt(head_dim) * (~empty).to(dtype)  # (B, NH)
    C = C.to(dtype) * scale[..., None, None]  # (B, NH, DH, DH)
    n = n.to(dtype) * scale[..., None]  # (B, NH, DH)
    m = torch.where(empty, 0.0, m.detach()).to(dtype)[..., None]  # (B, NH, 1)
    return C, n, m


def _state_to_ours(C: torch.Tensor, n: torch.Tensor, m: torch.Tensor, head_dim: int) -> MLSTMState:
    """Their (C, n, m (B, NH, 1)) -> our MLSTMState."""
    scale = 1 / math.sqrt(head_dim)
    return MLSTMState(C * scale, n * scale, m[..., 0])  # (B, NH, DH, DH), (B, NH, DH), (B, NH)


def _padded_length(S: int, chunk_size: int) -> int:
    """The shortest length >= S that TFLA takes with this chunk size (the native kernels take it too)."""
    if S <= _LONG_LENGTH:
        return max(_MIN_LENGTH, 1 << (S - 1).bit_length())
    return -(-S // chunk_size) * chunk_size


def _pad_sequence(q, k, v, i, f, length: int):
    """Inputs padded to ``length`` steps with steps that keep the state; their outputs are to be dropped."""
    extra = length - q.shape[2]
    q, k, v = (pad_time(x, extra, 0.0) for x in (q, k, v))  # (B, NH, length, DH)
    return q, k, v, pad_time(i, extra, _PAD_INPUT), pad_time(f, extra, _PAD_FORGET)  # gates (B, NH, length)


@functools.cache
def _chunkwise_kernel(kernel: str):
    from mlstm_kernels.torch import get_mlstm_kernel

    return get_mlstm_kernel(kernel)


@functools.cache
def _step_kernel(kernel: str):
    from mlstm_kernels.torch import get_mlstm_step_kernel

    return get_mlstm_step_kernel(kernel)


def chunkwise_with_kernel(kernel, q, k, v, i, f, *, initial_state, return_state, forget_gate, eps, chunk_size):
    """``"mlstm.chunkwise"`` on the mlstm_kernels chunkwise kernel named ``kernel``; our arguments and results."""
    reason = _unsupported(kernel, q, forget_gate, chunk_size)
    if reason is not None:
        fallback = _torch_fallback("mlstm.chunkwise", reason, q.device)
        options = dict(initial_state=initial_state, return_state=return_state, forget_gate=forget_gate, eps=eps)
        return fallback(q, k, v, i, f, **options, chunk_size=chunk_size)
    B, NH, S, DH = q.shape
    length = _padded_length(S, chunk_size)
    if initial_state is None:
        C0 = n0 = m0 = None  # their kernels start from C = n = 0, m = 0
    else:
        C0, n0, m0 = _state_to_theirs(initial_state, DH, _state_dtype(q.dtype))
    result = _chunkwise_kernel(kernel)(
        *_pad_sequence(q, k, v, i, f, length),
        c_initial=C0,
        n_initial=n0,
        m_initial=m0,
        return_last_states=return_state,
        eps=eps,
        chunk_size=min(chunk_size, length),
        autocast_kernel_dtype=q.dtype,
    )
    h, last = result if return_state else (result, None)  # h (B, NH, length, DH)
    h = h[:, :, :S]  # (B, NH, S, DH)
    return (h, _state_to_ours(*last, DH)) if return_state else h


def step_with_kernel(kernel, q, k, v, i, f, *, state, forget_gate, eps):
    """``"mlstm.step"`` on the mlstm_kernels step kernel named ``kernel``; our arguments and results."""
    reason = _unsupported(kernel, q, forget_gate)
    if reason is not None:
        fallback = _torch_fallback("mlstm.step", reason, q.device)
        return fallback(q, k, v, i, f, state=state, forget_gate=forget_gate, eps=eps)
    B, NH, _, DH = q.shape
    dtype_state = _state_dtype(q.dtype)
    if state is None:
        zeros = functools.partial(torch.zeros, dtype=dtype_state, device=q.device)
        C, n, m = zeros(B, NH, DH, DH), zeros(B, NH, DH), zeros(B, NH, 1)  # their empty state: m = 0
    else:
        C, n, m = _state_to_theirs(state, DH, dtype_state)
    h, (C, n, m) = _step_kernel(kernel)(
        q[:, :, 0], k[:, :, 0], v[:, :, 0], i, f, c=C, n=n, m=m, eps=eps, dtype_state=dtype_state
    )  # h (B, NH, DH)
    return h[:, :, None], _state_to_ours(C, n, m, DH)  # (B, NH, 1, DH)


chunkwise_triton = functools.partial(chunkwise_with_kernel, TRITON_CHUNKWISE_KERNEL)
step_triton = functools.partial(step_with_kernel, TRITON_STEP_KERNEL)

# Triton 3.6's LLVM aborts compiling TFLA unless its optimiser is off (measured on an H200); the probe finds out
_PROBED = dict(probed=True, packages=("mlstm_kernels",), workarounds=({"DISABLE_LLVM_OPT": "1"},))
register("mlstm.chunkwise", "mlstm_kernels", chunkwise_triton, is_available=_available, priority=10, **_PROBED)
register("mlstm.step", "mlstm_kernels", step_triton, is_available=_available, priority=10, **_PROBED)
