"""The Triton functions the forward and backward kernels share: loading a chunk's tiles, the recurrence's combine,
a chunk's states, rows of a chunk's tiles.

A chunk is CHUNK steps of BLOCK_D channels and BLOCK_N states: tiles (CHUNK, BLOCK_D, BLOCK_N) in float32, scanned
along the steps with ``tl.associative_scan``. Decays are ``exp2(dt * A log2(e))``: the caller passes A scaled by
log2(e) once, so each element costs one multiply and one ``ex2``.

Where a thread holds all steps of its elements (the layout the compiler picks for these tiles: the steps are the
slowest dim), the scan is a sequential loop in registers and a mask on the step index is a constant per register.
So the state entering a chunk is added to the first step's input (a step's mask selects it or -0.0, and x + -0.0
folds to x), not multiplied by the products of the decays: the scan's products are then never used, and the
compiler drops them.
"""

import triton
import triton.language as tl


@triton.jit
def load_rows(row_pointers, stride_time, first, steps, seq_len, column_mask):
    """The tile (CHUNK, K) of steps ``first + steps`` from ``row_pointers`` (K,) at step 0, in its dtype; 0 outside
    the sequence. The kernels load a chunk's tiles one iteration ahead, so the loads run during the previous
    chunk's work."""
    time = first + steps  # (CHUNK,)
    mask = ((time >= 0) & (time < seq_len))[:, None] & column_mask[None, :]
    return tl.load(row_pointers[None, :] + time.to(tl.int64)[:, None] * stride_time, mask=mask, other=0.0)


@triton.jit
def compose(decay_earlier, input_earlier, decay_later, input_later):
    """Two steps of ``h -> decay h + input`` as one, the earlier first. A scan run backwards (``reverse=True``)
    passes the steps it has already combined first as well, so the same function composes ``g -> a g + c`` from
    the end."""
    return decay_earlier * decay_later, decay_later * input_earlier + input_later


@triton.jit
def _last_two(has_before_earlier, before_earlier, last_earlier, has_before_later, before_later, last_later):
    """Two runs of steps as one, the earlier first, each as (whether it has two steps, its second-to-last value,
    its last value): associative, so a scan over single steps (has_before 0, before: the value before the run)
    gives every step the value of the step before it."""
    before = tl.where(has_before_later != 0, before_later, last_earlier)
    return has_before_later * 0 + 1, before, last_later


@triton.jit
def shifted(tile, first):
    """The rows of ``tile`` (CHUNK, BLOCK_D, BLOCK_N) one step later, ``first`` (BLOCK_D, BLOCK_N) on row 0. Where a
    thread holds all steps, the flags are constants and the scan folds to a renaming of registers."""
    no_earlier = tl.zeros(tile.shape, dtype=tl.int32)
    _, before, _ = tl.associative_scan((no_earlier, tl.broadcast_to(first[None, :, :], tile.shape), tile), 0, _last_two)
    return before


@triton.jit
def on_row(tile, steps, index, value):
    """``tile`` (CHUNK, BLOCK_D, BLOCK_N) plus ``value`` (BLOCK_D, BLOCK_N) on its row ``index``."""
    return tile + tl.where(steps[:, None, None] == index, value[None, :, :], -0.0)


@triton.jit
def row(tile, steps, index):
    """The row ``index`` of a (CHUNK, BLOCK_D, BLOCK_N) tile: (BLOCK_D, BLOCK_N). ``steps``: tl.arange(0, CHUNK)."""
    return tl.sum(tl.where(steps[:, None, None] == index, tile, -0.0), axis=0)


@triton.jit
def chunk_states(dt, dtx, B, A_log2, start, steps):
    """dt, dtx = dt x: (CHUNK, BLOCK_D), B: (CHUNK, BLOCK_N), A_log2: (BLOCK_D, BLOCK_N), start: the state entering
    the chunk (BLOCK_D, BLOCK_N) -> the decays a_t and the states h_t, (CHUNK, BLOCK_D, BLOCK_N) each."""
    decay = tl.exp2(dt[:, :, None] * A_log2[None, :, :])  # (CHUNK, BLOCK_D, BLOCK_N)
    inputs = dtx[:, :, None] * B[:, None, :]  # (CHUNK, BLOCK_D, BLOCK_N)
    first_input = on_row(inputs, steps, 0, row(decay, steps, 0) * start)  # h_0 = a_0 start + u_0
    _, states = tl.associative_scan((decay, first_input), 0, compose)
    return decay, states
