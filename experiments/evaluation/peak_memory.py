"""The peak memory of a computation's tensors, on the GPU or the CPU.

CUDA: ``torch.cuda.max_memory_allocated`` above what was allocated before. CPU: the profiler's memory events (each
allocation and free of a tensor, with its bytes) summed in time order, their highest running total; the process's
resident size would also count the allocator's cached pages and the interpreter, and only ever grows.
"""

from collections.abc import Callable
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile


def peak_memory_bytes(compute: Callable[[], Any], device: torch.device) -> tuple[Any, int]:
    """``compute()``'s result and the most bytes its tensors held at once, beyond those held before it ran."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        before = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        result = compute()
        torch.cuda.synchronize(device)
        return result, torch.cuda.max_memory_allocated(device) - before
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as profiler:
        result = compute()
    # the public FunctionEvents drop the standalone "[memory]" events; the kineto results keep them
    events = sorted(
        (event.start_ns(), event.nbytes())
        for event in profiler.profiler.kineto_results.events()
        if event.name() == "[memory]" and event.device_type() == torch.autograd.DeviceType.CPU
    )
    live = peak = 0
    for _, nbytes in events:  # an allocation's bytes are positive, a free's negative
        live += nbytes
        peak = max(peak, live)
    return result, peak
