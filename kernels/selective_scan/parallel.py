"""Torch backend of the selective scan: chunk by chunk, a parallel prefix scan within each chunk.

For each chunk of L steps (L a power of two) the decays ``exp(dt A)`` and inputs ``dt x B`` of shape
(B, L, DI, N) are formed, scanned in place (``prefix_scan_``), shifted by the state entering the chunk
and read out with C at once, so the (B, S, DI, N) states of the whole sequence never exist; a short
loop over chunks carries the (B, DI, N) state. The backward keeps only the states entering the chunks,
recomputes each chunk's states and runs the adjoint recurrence ``g_t = dL/dh_t + a_{t+1} g_{t+1}``
backwards through the chunks (the recomputation scheme of the mamba-ssm CUDA kernel). A ragged last
chunk is padded with dt = 0 (decay 1, no input), which keeps the state. Half-precision inputs are
computed in float32, as the CUDA kernel does.
"""

import torch
from torch.nn.functional import pad

from kernels.backends import register
from kernels.selective_scan.prefix_scan import prefix_scan_


def _in_chunks(t: torch.Tensor, num_chunks: int, chunk_len: int) -> torch.Tensor:
    """(B, S, F) -> (B, NC, L, F), padded with zeros after the sequence."""
    extra = num_chunks * chunk_len - t.shape[1]
    return pad(t, (0, 0, 0, extra)).view(t.shape[0], num_chunks, chunk_len, t.shape[2])


def _chunk_states(dt, dtx, B, A, start) -> tuple[torch.Tensor, torch.Tensor]:
    """Decays and states (B, L, DI, N) of one chunk; dt, dtx: (B, L, DI), B: (B, L, N), start: (B, DI, N)."""
    decay = torch.exp(dt[..., None] * A)  # (B, L, DI, N)
    states = dtx[..., None] * B[:, :, None, :]  # (B, L, DI, N), the inputs dt x B until scanned
    decay_since_start = decay.clone()
    prefix_scan_(decay_since_start.flatten(2), states.flatten(2))
    states.addcmul_(decay_since_start, start[:, None])
    return decay, states


class _SelectiveScan(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dt, A, B, C, D, h0, chunk_len):
        batch, seq_len, inner = x.shape
        num_chunks = -(-seq_len // chunk_len)
        dt_c, dtx_c, B_c, C_c = (_in_chunks(t, num_chunks, chunk_len) for t in (dt, dt * x, B, C))  # (B, NC, L, .)
        state = h0 if h0 is not None else x.new_zeros(batch, inner, A.shape[1])  # (B, DI, N)
        starts, outputs = [], []
        for c in range(num_chunks):
            starts.append(state)
            _, states = _chunk_states(dt_c[:, c], dtx_c[:, c], B_c[:, c], A, state)  # (B, L, DI, N)
            outputs.append((states * C_c[:, c, :, None, :]).sum(-1))  # (B, L, DI)
            state = states[:, -1].clone()  # (B, DI, N)
        y = torch.cat(outputs, dim=1)[:, :seq_len]  # (B, S, DI)
        if D is not None:
            y = y + x * D
        ctx.save_for_backward(x, dt, A, B, C, D, h0, torch.stack(starts, dim=1))
        ctx.chunk_len = chunk_len
        return y, state

    @staticmethod
    def backward(ctx, grad_y, grad_final_state):
        x, dt, A, B, C, D, h0, starts = ctx.saved_tensors  # starts: (B, NC, DI, N)
        batch, seq_len, inner = x.shape
        num_chunks, chunk_len = starts.shape[1], ctx.chunk_len
        chunked = [_in_chunks(t, num_chunks, chunk_len) for t in (dt, dt * x, B, C, grad_y)]
        dt_c, dtx_c, B_c, C_c, grad_y_c = chunked  # (B, NC, L, .)
        # carry: a_{t+1} g_{t+1} flowing into the last step of the chunk before (from the final state: its gradient)
        carry = grad_final_state if grad_final_state is not None else x.new_zeros(batch, inner, A.shape[1])
        grad_A = torch.zeros_like(A)
        grad_dt, grad_dtx, grad_B, grad_C = [], [], [], []
        for c in reversed(range(num_chunks)):
            decay, states = _chunk_states(dt_c[:, c], dtx_c[:, c], B_c[:, c], A, starts[:, c])  # (B, L, DI, N)
            grad_C.append((states * grad_y_c[:, c, :, :, None]).sum(2))  # (B, L, N)
            g = grad_y_c[:, c, :, :, None] * C_c[:, c, :, None, :]  # (B, L, DI, N): dL/dh_t through y_t
            decay_next = torch.ones_like(decay)  # a_{t+1} within the chunk; the carry already holds a_{t+1} g_{t+1}
            decay_next[:, :-1] = decay[:, 1:]
            prefix_scan_(decay_next.flatten(2), g.flatten(2), reverse=True)
            g.addcmul_(decay_next, carry[:, None])  # (B, L, DI, N): the total dL/dh_t
            carry = decay[:, 0] * g[:, 0]  # (B, DI, N)
            states_before = torch.cat([starts[:, c, None], states[:, :-1]], dim=1)  # (B, L, DI, N): h_{t-1}
            grad_log_decay = g * states_before * decay  # (B, L, DI, N): dL/d(dt_t A)
            grad_A += (grad_log_decay * dt_c[:, c, :, :, None]).sum((0, 1))
            grad_dt.append((grad_log_decay * A).sum(-1))  # (B, L, DI), through the decay
            grad_dtx.append((g * B_c[:, c, :, None, :]).sum(-1))  # (B, L, DI)
            grad_B.append((g * dtx_c[:, c, :, :, None]).sum(2))  # (B, L, N)

        def joined(chunks: list[torch.Tensor]) -> torch.Tensor:  # reversed chunks -> (B, S, .)
            return torch.cat(chunks[::-1], dim=1)[:, :seq_len]

        grad_dtx = joined(grad_dtx)  # (B, S, DI)
        grad_x, grad_dt = grad_dtx * dt, joined(grad_dt) + grad_dtx * x
        grad_D = None
        if D is not None:
            grad_x = grad_x + grad_y * D
            grad_D = (grad_y * x).sum((0, 1))
        grad_h0 = carry if h0 is not None else None
        return grad_x, grad_dt, grad_A, joined(grad_B), joined(grad_C), grad_D, grad_h0, None


def selective_scan_parallel(x, dt, A, B, C, D, *, initial_state, return_state, chunk_size):
    """``selective_scan`` on validated inputs; ``initial_state`` may be None (zeros)."""
    input_dtype, compute_dtype = x.dtype, torch.promote_types(x.dtype, torch.float32)
    x, dt, A, B, C, D, h0 = (None if t is None else t.to(compute_dtype) for t in (x, dt, A, B, C, D, initial_state))
    chunk_len = min(chunk_size, 1 << (x.shape[1] - 1).bit_length())  # no longer than S rounded up to a power of two
    y, final_state = _SelectiveScan.apply(x, dt, A, B, C, D, h0, chunk_len)
    return (y.to(input_dtype), final_state.to(input_dtype)) if return_state else y.to(input_dtype)


register("selective_scan", "torch", selective_scan_parallel)
