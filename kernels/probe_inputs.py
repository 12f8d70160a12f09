"""Pieces of the ops' probe cases (``kernels.backends.ProbeCase``): seeded tiny inputs and the losses compared.

Every tensor is drawn on the CPU from one seeded generator and moved to the probed device, so the backend and its
torch reference see the same numbers in every process.
"""

import torch


def seeded(
    *shapes: tuple[int, ...], device: torch.device, dtype: torch.dtype, seed: int = 0, requires_grad: bool = True
) -> list[torch.Tensor]:
    """Standard normal tensors of ``shapes`` (one generator, in order), leaves on ``device`` in ``dtype``."""
    generator = torch.Generator().manual_seed(seed)
    return [
        torch.randn(shape, generator=generator).to(device=device, dtype=dtype).requires_grad_(requires_grad)
        for shape in shapes
    ]


def first_output(result):
    """The output of an op's result: ``result`` itself, or its first item when the op returned (output, state)."""
    return result[0] if isinstance(result, tuple) else result


def weighted_sum(output: torch.Tensor) -> torch.Tensor:
    """sum(output * w) with fixed weights w ~ N(0, 1) of output's shape: the loss of most probe cases."""
    weights = torch.randn(output.shape, generator=torch.Generator().manual_seed(7)).to(output.device)
    return (output.float() * weights).sum()


def weighted_headwise_norm(output: torch.Tensor) -> torch.Tensor:
    """weighted_sum of the output normalised over its last dim (a head's features), the way the mLSTM layer sees
    its cell's output: blind to the scale of each head's vector, where mlstm_kernels' TFLA backward treats the
    normaliser as a constant (kernels.mlstm.mlstm_kernels_backend)."""
    return weighted_sum(torch.nn.functional.layer_norm(output.float(), output.shape[-1:]))
