"""WKV of RWKV-4 in chunked form: a stabilised matrix form within chunks, the state carried across chunks.

``wkv_t = (a_{t-1} + e^{u + k_t} v_t) / (b_{t-1} + e^{u + k_t})`` with ``a_t = e^{-w} a_{t-1} + e^{k_t} v_t``,
``b_t = e^{-w} b_{t-1} + e^{k_t}`` and ``w = exp(time_decay)`` per channel. Within a chunk of L steps the
log weight of step s in the output at t is ``k_s - (t - 1 - s) w`` (s < t), ``k_t + u`` (s = t), and the
state entering the chunk enters with ``log_scale - t w``; every row is shifted by its running max before
``exp``, so nothing overflows. All chunks are computed at once from the states entering them, which a
short loop over chunks carries in the same stabilised (values, weights, log scale) form. The sequence
is padded in front to whole chunks with steps of weight zero (k = -1e38); the entering log scale is
raised by the decay of the padded steps so that the padding changes nothing.
"""

import torch
from torch.nn.functional import pad

from kernels.backends import register
from kernels.wkv4.state import EMPTY_LOG_SCALE, WKV4State
from kernels.wkv4.state import initial_state as empty_state


def _carry_states(start: WKV4State, own_values, own_weights, own_log_scale, chunk_decay) -> WKV4State:
    """States entering every chunk and the final state, fields (B, NC + 1, C).

    own_values, own_weights, own_log_scale: (B, NC, C), each chunk's own contribution to the state at its end;
    chunk_decay: (C,), the log decay over one chunk. The log scales made here carry no gradient (stabilisers).
    """
    values, weights, log_scale = [start.weighted_values], [start.weights], [start.log_scale]
    for c in range(own_values.shape[1]):
        decayed = log_scale[-1] - chunk_decay  # (B, C)
        scale = torch.maximum(decayed, own_log_scale[:, c]).detach()
        past, own = torch.exp(decayed - scale), torch.exp(own_log_scale[:, c] - scale)  # (B, C)
        values.append(past * values[-1] + own * own_values[:, c])
        weights.append(past * weights[-1] + own * own_weights[:, c])
        log_scale.append(scale)
    return WKV4State(*(torch.stack(field, dim=1) for field in (values, weights, log_scale)))


def wkv4_chunked(time_decay, time_first, k, v, *, initial_state, return_state, chunk_size):
    """Torch backend of ``wkv4`` on validated inputs; ``initial_state`` may be None (empty)."""
    batch, seq_len, channels = k.shape
    input_dtype, compute_dtype = k.dtype, torch.promote_types(k.dtype, torch.float32)
    time_decay, time_first, k, v = (t.to(compute_dtype) for t in (time_decay, time_first, k, v))
    chunk_len = min(chunk_size, seq_len)
    num_chunks = -(-seq_len // chunk_len)
    extra = num_chunks * chunk_len - seq_len
    w = torch.exp(time_decay)  # (C,): the state decays by exp(-w) per step

    k = pad(k, (0, 0, extra, 0), value=EMPTY_LOG_SCALE).view(batch, num_chunks, chunk_len, channels)
    v = pad(v, (0, 0, extra, 0)).view(batch, num_chunks, chunk_len, channels)
    steps = torch.arange(chunk_len, device=k.device, dtype=compute_dtype)  # (L,)
    # Log weight of step s in the output at t, less k_s: (L_t, L_s, C).
    gap = (steps[:, None] - 1 - steps[None, :])[..., None]  # (L, L, 1): t - 1 - s
    offset = torch.where(gap >= 0, -gap * w, time_first)
    offset = offset.masked_fill(gap < -1, float("-inf"))  # s > t: no weight
    log_weights = k[:, :, None] + offset  # (B, NC, L, L, C)

    # Each chunk's own contribution to the state at its end, stabilised by its max.
    own_log_weights = k - (chunk_len - 1 - steps)[:, None] * w  # (B, NC, L, C)
    own_scale = own_log_weights.amax(2).detach()  # (B, NC, C)
    own = torch.exp(own_log_weights - own_scale[:, :, None])  # (B, NC, L, C)
    if initial_state is None:
        initial_state = empty_state(batch, channels, dtype=compute_dtype, device=k.device)
    start = WKV4State(*(t.to(compute_dtype) for t in initial_state))
    start = start._replace(log_scale=start.log_scale + extra * w)  # undo the decay of the padded steps
    states = _carry_states(start, (own * v).sum(2), own.sum(2), own_scale, chunk_len * w)  # fields (B, NC + 1, C)
    starts = WKV4State(*(field[:, :-1] for field in states))  # (B, NC, C): entering each chunk

    state_log_weights = starts.log_scale[:, :, None] - steps[:, None] * w  # (B, NC, L, C)
    scale = torch.maximum(log_weights.amax(3), state_log_weights).detach()  # (B, NC, L, C)
    token_weights = torch.exp(log_weights - scale[:, :, :, None])  # (B, NC, L, L, C)
    state_weights = torch.exp(state_log_weights - scale)  # (B, NC, L, C)
    numerator = (token_weights * v[:, :, None]).sum(3) + state_weights * starts.weighted_values[:, :, None]
    denominator = token_weights.sum(3) + state_weights * starts.weights[:, :, None]
    wkv = (numerator / denominator).view(batch, num_chunks * chunk_len, channels)[:, extra:].to(input_dtype)
    if not return_state:
        return wkv
    return wkv, WKV4State(*(field[:, -1].to(input_dtype) for field in states))


register("wkv4", "torch", wkv4_chunked)
