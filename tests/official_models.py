"""Official xlstm==2.0.6 models (CPU, sLSTM backend "vanilla") for the oracle tests, built from the small stacks'
configs of models.xlstm.official_configs."""

import torch
from xlstm import xLSTMBlockStack, xLSTMLMModel

from models.xlstm.official_configs import SMALL_STACKS as STACKS
from models.xlstm.official_configs import official_config

__all__ = ["STACKS", "official_config", "official_model"]


def official_model(ratio: str, *, embedding_dim=32, context_length=16, vocab_size=None, dtype=torch.float64, seed=0):
    """An official stack (or LM model when vocab_size is given), initialised, then perturbed so that every
    weight matters (the official init zeroes gate weights and the sLSTM recurrent kernel)."""
    torch.manual_seed(seed)
    config = official_config(ratio, embedding_dim, context_length, vocab_size)
    model = xLSTMLMModel(config) if vocab_size is not None else xLSTMBlockStack(config)
    model.reset_parameters()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.2 * torch.randn_like(parameter))
    return model.to(dtype)
