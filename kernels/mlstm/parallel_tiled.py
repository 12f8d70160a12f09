"""Causal decayed sums of the mLSTM parallel form, tiled over query blocks: no S x S matrix, ever.

For query rows t and keys s <= t (any leading dims, one sequence per leading index):

    C~_ts = (q_t . k_s) exp(r_t + g_s)
    y_t   = sum_{s <= t} C~_ts [v_s, 1]          (the numerator and the row sum of the parallel form)

with r_t the row's and g_s the key's log weight; the caller keeps r_t + g_s <= 0 for s <= t (the
stabiliser). Rows are cut into blocks of L; the block [a, a + L) needs keys [0, a + L) only, so
nothing right of its diagonal square is computed. Its keys split in two parts:

- the diagonal square, keys [a, a + L): causal mask and one exp per entry, as in the untiled form,
  done for all blocks at once as a batch of L x L squares;
- the past keys [0, a), one block at a time: with c = max_{s < a} g_s (so r_t + c <= 0, as
  c <= max_{s <= t} g_s), exp(r_t + g_s) = exp(r_t + c) exp(g_s - c) with both factors in [0, 1], so
  the L x a tile C~ is one matmul of row-scaled q and key-scaled k, with no elementwise pass over
  it. A factor underflows only where the true weight is below the dtype's range relative to the
  row's largest weight, which is 1.

The backward recomputes everything instead of saving any tile. With dy_t = [dnum_t, dden_t]:

    dC~_ts = dy_t . [v_s, 1],   G_ts = dC~_ts exp(r_t + g_s)   (the gradient of q_t . k_s)
    dq_t  = sum_s G_ts k_s,   dk_s = sum_t G_ts q_t,   dv_s = sum_t C~_ts dnum_t
    dr_t  = sum_s dC~_ts C~_ts,   dg_s = sum_t dC~_ts C~_ts

On the past keys the last two need no tile: sum_s dC~_ts C~_ts = q_t . (past part of dq_t) and
sum_t dC~_ts C~_ts = k_s . (past part of dk_s). On the diagonal squares they are summed explicitly,
so that for a one-step sequence dr = dg exactly.
"""

import torch
from torch.autograd.function import once_differentiable
from torch.nn.functional import pad


def _blocks(x: torch.Tensor, L: int, fill: float = 0.0) -> torch.Tensor:
    """(..., S, D) -> (..., NB, L, D), the last block padded with ``fill``."""
    S = x.shape[-2]
    NB = -(-S // L)
    padded = pad(x, (0, 0, 0, NB * L - S), value=fill) if NB * L > S else x  # (..., NB * L, D)
    return padded.unflatten(-2, (NB, L))


def _unblocks(x: torch.Tensor, S: int) -> torch.Tensor:
    """(..., NB, L, D) -> (..., S, D), dropping the padding."""
    return x.flatten(-3, -2)[..., :S, :]


def _with_ones(v: torch.Tensor) -> torch.Tensor:
    """[v, 1]: one matmul with it gives both the weighted sum of v and the row sum of the weights."""
    return torch.cat([v, torch.ones_like(v[..., :1])], dim=-1)  # (..., S, DH + 1)


class _DiagonalSquares:
    """The inputs cut into blocks of L steps, for the L x L diagonal squares of all blocks at once.

    Padded steps have q = k = v = 0 and r = g = -inf: weight 0, whatever they are combined with.
    """

    def __init__(self, q, k, v_ones, r, g, L: int):
        self.q, self.k, self.v_ones = (_blocks(x, L) for x in (q, k, v_ones))  # (..., NB, L, DH[+1])
        r, g = (_blocks(x[..., None], L, float("-inf"))[..., 0] for x in (r, g))  # (..., NB, L)
        decay = torch.exp(r[..., :, None] + g[..., None, :])  # (..., NB, L, L); may be inf above the diagonal
        self.decay = decay.tril_()  # (..., NB, L, L)
        self.c_tilde = (self.q @ self.k.transpose(-2, -1)) * self.decay  # (..., NB, L, L)

    def sums(self, S: int) -> torch.Tensor:
        return _unblocks(self.c_tilde @ self.v_ones, S)  # (..., S, DH + 1)

    def gradients(self, dy, S: int):
        """dq, dk, dv, dr, dg of the diagonal squares' part of y."""
        dy = _blocks(dy, self.q.shape[-2])  # (..., NB, L, DH + 1)
        grad_c_tilde = dy @ self.v_ones.transpose(-2, -1)  # (..., NB, L, L)
        dv = self.c_tilde.transpose(-2, -1) @ dy[..., :-1]  # (..., NB, L, DH)
        grad_log_decay = grad_c_tilde * self.c_tilde  # (..., NB, L, L)
        dr, dg = grad_log_decay.sum(-1), grad_log_decay.sum(-2)  # (..., NB, L) each
        grad_qk = grad_c_tilde.mul_(self.decay)  # (..., NB, L, L)
        dq, dk = grad_qk @ self.k, grad_qk.transpose(-2, -1) @ self.q  # (..., NB, L, DH) each
        dq, dk, dv = (_unblocks(x, S) for x in (dq, dk, dv))  # (..., S, DH) each
        dr, dg = (_unblocks(x[..., None], S)[..., 0] for x in (dr, dg))  # (..., S) each
        return dq, dk, dv, dr, dg


class _PastKeys:
    """Row and key scales of the past-key tiles: block [a, b) sees keys [0, a) through
    (q_t exp(r_t + c)) . (k_s exp(g_s - c)), c = max_{s < a} g_s."""

    def __init__(self, q, k, r, g, L: int):
        S = q.shape[-2]
        self.k, self.g, self.L = k, g, L
        past_max = g.cummax(-1).values  # (..., S)
        starts = torch.arange(L, S, L, device=g.device)  # (NB - 1,) first row of every block but the first
        self.c = past_max[..., starts - 1]  # (..., NB - 1) c of every block but the first
        block_of_row = torch.arange(L, S, device=g.device) // L - 1  # (S - L,)
        self.row_scale = torch.exp(r[..., L:] + self.c[..., block_of_row])  # (..., S - L) rows from L on
        self.q_scaled = q[..., L:, :] * self.row_scale[..., None]  # (..., S - L, DH)

    def tiles(self):
        """(a, b, q_scaled rows [a, b), k_scaled keys [0, a), key_scale (..., a)) of every block but the first."""
        S, L = self.k.shape[-2], self.L
        for j, a in enumerate(range(L, S, L)):
            b = min(a + L, S)
            key_scale = torch.exp(self.g[..., :a] - self.c[..., j, None])  # (..., a)
            yield a, b, self.q_scaled[..., a - L : b - L, :], self.k[..., :a, :] * key_scale[..., None], key_scale


def _sums(q, k, v, r, g, L: int) -> torch.Tensor:
    v_ones = _with_ones(v)  # (..., S, DH + 1)
    y = _DiagonalSquares(q, k, v_ones, r, g, L).sums(q.shape[-2])  # (..., S, DH + 1)
    if q.shape[-2] == L:
        return y
    past = [
        (q_scaled @ k_scaled.transpose(-2, -1)) @ v_ones[..., :a, :]  # (..., b - a, DH + 1)
        for a, _, q_scaled, k_scaled, _ in _PastKeys(q, k, r, g, L).tiles()
    ]
    y[..., L:, :].add_(torch.cat(past, dim=-2))  # (..., S - L, DH + 1)
    return y


def _gradients(q, k, v, r, g, L: int, dy):
    """dq, dk, dv, dr, dg of sum(y * dy)."""
    S = q.shape[-2]
    v_ones = _with_ones(v)  # (..., S, DH + 1)
    dq, dk, dv, dr, dg = _DiagonalSquares(q, k, v_ones, r, g, L).gradients(dy, S)
    if S == L:
        return dq, dk, dv, dr, dg
    past = _PastKeys(q, k, r, g, L)
    dq_scaled, dk_past = [], torch.zeros_like(k)  # tiles (..., b - a, DH), (..., S, DH)
    for a, b, q_scaled, k_scaled, key_scale in past.tiles():
        c_tilde = q_scaled @ k_scaled.transpose(-2, -1)  # (..., b - a, a)
        dv[..., :a, :].add_(c_tilde.transpose(-2, -1) @ dy[..., a:b, :-1])  # (..., a, DH)
        grad_c_tilde = dy[..., a:b, :] @ v_ones[..., :a, :].transpose(-2, -1)  # (..., b - a, a)
        dq_scaled.append(grad_c_tilde @ k_scaled)  # (..., b - a, DH)
        dk_past[..., :a, :].addcmul_(grad_c_tilde.transpose(-2, -1) @ q_scaled, key_scale[..., None])
    dq_scaled = torch.cat(dq_scaled, dim=-2)  # (..., S - L, DH)
    dq[..., L:, :].addcmul_(dq_scaled, past.row_scale[..., None])  # (..., S - L, DH)
    dr[..., L:].add_((past.q_scaled * dq_scaled).sum(-1))  # (..., S - L)
    dg += (k * dk_past).sum(-1)  # (..., S)
    return dq, dk + dk_past, dv, dr, dg


class _CausalDecayedSums(torch.autograd.Function):
    """y = causal_decayed_sums(q, k, v, r, g, block_size); once differentiable, autocast off inside."""

    @staticmethod
    def forward(ctx, q, k, v, r, g, L: int):
        ctx.L = L
        ctx.save_for_backward(q, k, v, r, g)
        with torch.autocast(q.device.type, enabled=False):
            return _sums(q, k, v, r, g, L)

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        with torch.autocast(dy.device.type, enabled=False):
            return *_gradients(*ctx.saved_tensors, ctx.L, dy), None


def causal_decayed_sums(q, k, v, r, g, *, block_size: int) -> torch.Tensor:
    """y_t = sum_{s <= t} (q_t . k_s) exp(r_t + g_s) [v_s, 1], tiled over query blocks of ``block_size``.

    q, k, v: (..., S, DH); r, g: (..., S) with r_t + g_s <= 0 for s <= t. Returns y (..., S, DH + 1):
    y[..., :DH] the weighted sums of v, y[..., DH] the row sums of the weights. Differentiable once
    in q, k, v, r and g; the largest intermediates are (..., block_size, S).
    """
    return _CausalDecayedSums.apply(q, k, v, r, g, min(block_size, q.shape[-2]))
