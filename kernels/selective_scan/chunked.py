"""Torch backend of the selective scan: chunk by chunk, the recurrence stepped within each chunk.

For each chunk of L steps the decays ``exp(dt A)`` and inputs ``dt x B`` of shape (B, L, DI, N) are
formed at once, the recurrence ``h_t = a_t h_{t-1} + b_t`` runs over the chunk's L steps in place (one
fused multiply-add over (B, DI, N) per step: a single pass over the chunk, where a parallel prefix
scan makes several), and C reads the states out at once (batched matrix-vector products), so the
(B, S, DI, N) states of the whole sequence never exist; the loop over chunks carries the (B, DI, N)
state. The backward keeps only the states entering the chunks, recomputes each chunk's states and runs
the adjoint recurrence ``g_t = dL/dh_t + a_{t+1} g_{t+1}`` backwards through the chunks (the
recomputation scheme of the mamba-ssm CUDA kernel). A ragged last chunk is padded with dt = 0 (decay 1,
no input), which keeps the state. Half-precision inputs are computed in float32, as the CUDA kernel does.
"""

import torch
from torch.nn.functional import pad

from kernels.backends import register


def _in_chunks(t: torch.Tensor, num_chunks: int, chunk_len: int) -> torch.Tensor:
    """(B, S, F) -> (B, NC, L, F), padded with zeros after the sequence."""
    extra = num_chunks * chunk_len - t.shape[1]
    return pad(t, (0, 0, 0, extra)).view(t.shape[0], num_chunks, chunk_len, t.shape[2])


def _chunk_states(dt, dtx, B, A, start) -> tuple[torch.Tensor, torch.Tensor]:
    """Decays and states (B, L, DI, N) of one chunk; dt, dtx: (B, L, DI), B: (B, L, N), start: (B, DI, N)."""
    decay = torch.exp(dt[..., None] * A)  # (B, L, DI, N)
    states = dtx[..., None] * B[:, :, None, :]  # (B, L, DI, N), the inputs dt x B until the recurrence
    states[:, 0].addcmul_(decay[:, 0], start)
    for t in range(1, states.shape[1]):
        states[:, t].addcmul_(decay[:, t], states[:, t - 1])  # (B, DI, N)
    return decay, states


def _contract_state_dim(states: torch.Tensor, vectors: torch.Tensor) -> torch.Tensor:
    """(B, L, DI, N) x (B, L, N) -> (B, L, DI): sum over the state dim, as a batched matrix-vector product."""
    return (states @ vectors[..., None]).squeeze(-1)


def _contract_inner_dim(states: torch.Tensor, vectors: torch.Tensor) -> torch.Tensor:
    """(B, L, DI, N) x (B, L, DI) -> (B, L, N): sum over the inner dim, as a batched vector-matrix product."""
    return (vectors[..., None, :] @ states).squeeze(-2)


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
            _, states = _chunk_states(dt_c[:, c], dtx_c[:, c], B_c[:, c], A, state)
            outputs.append(_contract_state_dim(states, C_c[:, c]))  # (B, L, DI)
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
            decay, states = _chunk_states(dt_c[:, c], dtx_c[:, c], B_c[:, c], A, starts[:, c])
            grad_C.append(_contract_inner_dim(states, grad_y_c[:, c]))  # (B, L, N)
            g = grad_y_c[:, c, :, :, None] * C_c[:, c, :, None, :]  # (B, L, DI, N): dL/dh_t through y_t
            g[:, -1] += carry  # the last step's gradient takes in a_{t+1} g_{t+1} of the chunk after
            for t in reversed(range(g.shape[1] - 1)):
                g[:, t].addcmul_(decay[:, t + 1], g[:, t + 1])
            carry = decay[:, 0] * g[:, 0]  # (B, DI, N)
            grad_log_decay = decay.mul_(g)  # (B, L, DI, N): dL/d(dt_t A) = g_t a_t h_{t-1}, times h_{t-1} next
            grad_log_decay[:, 1:] *= states[:, :-1]
            grad_log_decay[:, 0] *= starts[:, c]
            grad_A += (grad_log_decay * dt_c[:, c, :, :, None]).sum((0, 1))
            grad_dt.append((grad_log_decay * A).sum(-1))  # (B, L, DI), through the decay
            grad_dtx.append(_contract_state_dim(g, B_c[:, c]))  # (B, L, DI)
            grad_B.append(_contract_inner_dim(g, dtx_c[:, c]))  # (B, L, N)

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


def selective_scan_chunked(x, dt, A, B, C, D, *, initial_state, return_state, chunk_size):
    """``selective_scan`` on validated inputs; ``initial_state`` may be None (zeros)."""
    input_dtype, compute_dtype = x.dtype, torch.promote_types(x.dtype, torch.float32)
    x, dt, A, B, C, D, h0 = (None if t is None else t.to(compute_dtype) for t in (x, dt, A, B, C, D, initial_state))
    chunk_len = min(chunk_size, x.shape[1])
    y, final_state = _SelectiveScan.apply(x, dt, A, B, C, D, h0, chunk_len)
    return (y.to(input_dtype), final_state.to(input_dtype)) if return_state else y.to(input_dtype)


register("selective_scan", "torch", selective_scan_chunked)
