"""Causal long convolution per channel (H3, Hyena): ops ``"long_conv"`` and ``"long_conv.step"``.

``y[:, t, c] = sum_{j=0}^{min(t, L-1)} k[j, c] * u[:, t - j, c]`` for inputs u (B, S, C) and a kernel k (L, C)
that may be shorter or longer than the sequence (taps beyond S are unused). Methods of the torch backend:
``"fft"`` (zero-padded real FFT, O(S log S), the form H3 and Hyena train with) and ``"direct"`` (a depthwise
``conv1d``, O(S L), the reference the FFT form is checked against). ``step`` gives one output from a history of
past inputs, for recurrent inference.
"""

import torch
import torch.nn.functional as F

from kernels.backends import register, resolve

METHODS = ("fft", "direct")


def _check(u: torch.Tensor, k: torch.Tensor) -> None:
    if u.dim() != 3 or k.dim() != 2 or u.shape[-1] != k.shape[-1] or k.shape[0] < 1:
        raise ValueError(
            f"long_conv expects u (B, S, C) and k (L, C) with L >= 1 and the same C; got u {tuple(u.shape)}, "
            f"k {tuple(k.shape)}"
        )


def _fft_conv(u: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    S = u.shape[1]
    k = k[:S]  # (L, C), L <= S
    fft_size = 1 << (S + k.shape[0] - 2).bit_length()  # a power of two >= S + L - 1: no circular wrap-around
    compute_dtype = torch.promote_types(u.dtype, torch.float32)  # no FFT in half precision
    u_f = torch.fft.rfft(u.to(compute_dtype), n=fft_size, dim=1)  # (B, F, C)
    k_f = torch.fft.rfft(k.to(compute_dtype), n=fft_size, dim=0)  # (F, C)
    return torch.fft.irfft(u_f * k_f, n=fft_size, dim=1)[:, :S].to(u.dtype)  # (B, S, C)


def _direct_conv(u: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    k = k[: u.shape[1]]  # (L, C)
    L, C = k.shape
    padded = F.pad(u.transpose(1, 2), (L - 1, 0))  # (B, C, L - 1 + S)
    weight = k.flip(0).transpose(0, 1)[:, None, :]  # (C, 1, L): conv1d correlates, so flip the taps
    return F.conv1d(padded, weight.to(u.dtype), groups=C).transpose(1, 2)  # (B, S, C)


def _causal_conv_torch(u: torch.Tensor, k: torch.Tensor, *, method: str) -> torch.Tensor:
    return _fft_conv(u, k) if method == "fft" else _direct_conv(u, k)


def _step_torch(history: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    taps = min(history.shape[1], k.shape[0])
    recent_first = history[:, -taps:].flip(1)  # (B, taps, C): the newest input meets tap 0
    return torch.einsum("btc,tc->bc", recent_first, k[:taps].to(history.dtype))  # (B, C)


register("long_conv", "torch", _causal_conv_torch)
register("long_conv.step", "torch", _step_torch)


def causal_conv(u: torch.Tensor, k: torch.Tensor, *, method: str = "fft", backend: str = "auto") -> torch.Tensor:
    """Causal convolution of u (B, S, C) with the per-channel kernel k (L, C) -> (B, S, C).

    ``method``: ``"fft"`` or ``"direct"`` (same result up to round-off); ``backend``: ``"auto"`` or ``"torch"``.
    """
    if method not in METHODS:
        raise ValueError(f"long_conv method={method!r} is not valid; valid choices: {list(METHODS)}")
    _check(u, k)
    return resolve("long_conv", backend, u.device)(u, k, method=method)


def causal_conv_step(history: torch.Tensor, k: torch.Tensor, *, backend: str = "auto") -> torch.Tensor:
    """The convolution's output at the newest position: history (B, T, C), oldest first, newest last -> (B, C).

    Equals ``causal_conv(history, k)[:, -1]``; only the last L inputs matter.
    """
    _check(history, k)
    return resolve("long_conv.step", backend, history.device)(history, k)


__all__ = ["METHODS", "causal_conv", "causal_conv_step"]
