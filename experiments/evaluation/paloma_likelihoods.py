"""A language model's log-likelihoods of PALOMA's scoring windows (tasks.text.Paloma.windows), summed per document.

Each batch's logits are turned into the log-probability of every target in float32 (bf16 logits of a mixed-precision
run, the paper's setting for PALOMA, included: the caller runs the model under autocast), the scored positions
kept, and the sums added to the window's document, in float64, so that no token is lost or counted twice however
the windows were batched.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class DocumentLikelihoods:
    log_likelihood: np.ndarray  # (D,) float64: the sum of ln p(token | its context) over a document's scored tokens
    tokens: np.ndarray  # (D,) int64: the number of scored tokens of each document


def document_likelihoods(
    model: Callable[[torch.Tensor], torch.Tensor], batches: Iterable, documents: int, device: torch.device | str = "cpu"
) -> DocumentLikelihoods:
    """Score every batch (inputs, targets, scored, document arrays, as tasks.text.Paloma.windows gives them) with
    ``model`` (tokens (B, S) -> logits (B, S, V)) and total the scored tokens of each of ``documents``."""
    log_likelihood = torch.zeros(documents, dtype=torch.float64)
    tokens = torch.zeros(documents, dtype=torch.int64)
    with torch.no_grad():
        for batch in batches:
            inputs = torch.as_tensor(batch.inputs, device=device)  # (B, S)
            targets = torch.as_tensor(batch.targets, device=device)  # (B, S)
            scored = torch.as_tensor(batch.scored, device=device)  # (B, S)
            logits = model(inputs)  # (B, S, V)
            token_log_likelihood = -F.cross_entropy(
                logits.flatten(0, 1).float(), targets.flatten(), reduction="none"
            ).view(targets.shape)  # (B, S)
            window_sums = torch.where(scored, token_log_likelihood, 0.0).double().sum(-1)  # (B,)
            document = torch.as_tensor(batch.document)  # (B,)
            log_likelihood.index_add_(0, document, window_sums.cpu())
            tokens.index_add_(0, document, scored.sum(-1).cpu())
    return DocumentLikelihoods(log_likelihood.numpy(), tokens.numpy())
