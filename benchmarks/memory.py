"""Peak memory of CPU tensor code: bytes of tensor storages alive at once, seen through torch dispatch.

CPU allocations have no allocator statistics like ``torch.cuda.max_memory_allocated``; this mode
counts every storage an op creates until its last tensor dies (saved-for-backward tensors and
gradients included), so it measures what a computation holds, not what the process allocator keeps.
"""

import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten


class LiveTensorBytes(TorchDispatchMode):
    """Tracks bytes of tensor storages created inside the mode and still alive: peak and largest."""

    def __init__(self):
        super().__init__()
        self.holders = {}  # storage address -> [live tensors on it, bytes]
        self.live = self.peak = self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for tensor in tree_flatten(out)[0]:
            if isinstance(tensor, torch.Tensor):
                self._track(tensor)
        return out

    def _track(self, tensor):
        storage = tensor.untyped_storage()
        address = storage.data_ptr()
        if address == 0:
            return
        if address not in self.holders:
            self.holders[address] = [0, storage.nbytes()]
            self.live += storage.nbytes()
            self.peak = max(self.peak, self.live)
            self.largest = max(self.largest, storage.nbytes())
        self.holders[address][0] += 1
        weakref.finalize(tensor, self._release, address)

    def _release(self, address):
        holder = self.holders[address]
        holder[0] -= 1
        if holder[0] == 0:
            self.live -= holder[1]
            del self.holders[address]
