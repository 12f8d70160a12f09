"""Chunk and block sizes of the Triton mLSTM kernels, chosen per call from the shapes (plain Python, no triton).

The result does not depend on them (the chunkwise form is exact for any chunk size; blocks only split sums),
only the speed does.
"""

from dataclasses import dataclass

import torch

MIN_BLOCK = 16  # tl.dot's smallest tile side
MAX_CHUNK = 256
# Blocks for 16-bit inputs (32 x 32 for float32, whose exact matmuls run without tensor cores and need more
# registers): compiled by ptxas for sm_90 (Triton 3.6 and 3.9) with 8 warps, no kernel spills registers.
STEP_BLOCK = 64  # rows and columns of a score tile: 64 x 64 as TFLA's kernels
KEY_BLOCK = 64  # head-dim block of q and k in the matmuls over it
VALUE_BLOCK = 64  # head-dim block of v, h and dh in the tiles and the sums over that dim
STATE_BLOCK = 64  # block of C's sides in the recurrence across chunks
STATE_STEP_BLOCK = 128  # steps per tile in the recurrence across chunks
FLOAT32_BLOCK = 32  # every block for float32 inputs (steps per tile in the recurrence: 64)
MAX_HEAD_DIM = 512


@dataclass(frozen=True)
class Tiling:
    chunk: int  # L: steps per chunk, a power of two
    step_block: int  # BL: rows and columns of a score tile; divides L
    key_block: int  # BK: block of the q, k head dim
    value_block: int  # BV: block of the v, h head dim
    state_key_block: int  # blocks of C (key side, value side) in the recurrence across chunks
    state_value_block: int
    state_step_block: int  # steps per tile in the recurrence: a whole chunk where it fits, so that the loop
    # over chunks is the innermost one and the compiler prefetches the next chunk's tiles during this one's

    def __post_init__(self):
        for name, size in vars(self).items():
            if size < MIN_BLOCK or size & (size - 1):
                raise ValueError(f"tiling {name}={size} must be a power of two >= {MIN_BLOCK}")
        for name in ("step_block", "state_step_block"):
            if getattr(self, name) > self.chunk:
                raise ValueError(f"tiling {name}={getattr(self, name)} must not exceed chunk={self.chunk}")


def next_power_of_two(x: int) -> int:
    return 1 << max(0, x - 1).bit_length()


def kernel_chunk(chunk_size: int, S: int) -> int:
    """The chunk the kernels use for the user's ``chunk_size``: rounded down to a power of two within
    [16, 256], and no longer than S needs."""
    chunk = 1 << (min(max(chunk_size, MIN_BLOCK), MAX_CHUNK).bit_length() - 1)
    return min(chunk, max(MIN_BLOCK, next_power_of_two(S)))


def _dim_block(head_dim: int, largest: int) -> int:
    return min(largest, max(MIN_BLOCK, next_power_of_two(head_dim)))


def _processors(device: torch.device) -> int:
    return torch.cuda.get_device_properties(device).multi_processor_count if device.type == "cuda" else 1


def choose_tiling(
    S: int, DHK: int, DHV: int, heads: int, chunk_size: int, device: torch.device, dtype: torch.dtype = torch.bfloat16
) -> Tiling:
    """Blocks for ``heads`` = B * NH sequences of S steps with head dims DHK (q, k) and DHV (v) in ``dtype``.

    The recurrence across chunks runs one program per (head, block of C): halve its blocks while that leaves
    fewer programs than the device has processors.
    """
    chunk = kernel_chunk(chunk_size, S)
    wide = dtype == torch.float32
    step, key, value, state = (FLOAT32_BLOCK,) * 4 if wide else (STEP_BLOCK, KEY_BLOCK, VALUE_BLOCK, STATE_BLOCK)
    state_step = 2 * FLOAT32_BLOCK if wide else STATE_STEP_BLOCK
    state_key, state_value = _dim_block(DHK, state), _dim_block(DHV, state)
    processors = _processors(device)

    def programs(key, value):
        return heads * -(-DHK // key) * -(-DHV // value)

    while programs(state_key, state_value) < processors and max(state_key, state_value) > MIN_BLOCK:
        if state_key >= state_value:
            state_key //= 2
        else:
            state_value //= 2
    return Tiling(
        chunk=chunk,
        step_block=min(step, chunk),
        key_block=_dim_block(DHK, key),
        value_block=_dim_block(DHV, value),
        state_key_block=state_key,
        state_value_block=state_value,
        state_step_block=min(state_step, chunk),
    )
