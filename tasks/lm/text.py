"""What the language-modelling family gives the suite's language-model evaluations (tasks.text, registered as
tasks.registry.TEXT and as the family's validation sequences): GPT-2's tokenizer, PALOMA's documents and scoring
windows, the harness's offline stand-ins (a tiny sample and items of the offline corpus's test documents), and a task's validation sequences at any context length. Torch-free until
validation sequences are asked for."""

from collections.abc import Iterator, Sequence
from dataclasses import replace

import numpy as np

from tasks.lm.config import LMTaskConfig
from tasks.lm.lmeval_offline import OFFLINE_TASK_DIR, lmeval_offline
from tasks.lm.lmeval_sample import SAMPLE_TASK_DIR, lmeval_sample
from tasks.lm.paloma import HUB_ID, SOURCES, SPLITS, PalomaDocument, read_documents
from tasks.lm.paloma_sample import SAMPLE_LOCATION, paloma_sample
from tasks.lm.paloma_windows import WindowBatch, tokenize, window_batches
from tasks.lm.tokenizer import encoding, tokenizer
from tasks.text import Paloma, Text


def paloma_documents(location: str, split: str, sources: Sequence[str]) -> list[PalomaDocument]:
    """The documents of ``sources`` in ``split``: from a local clone of the hub repository, the hub (HUB_ID) or the
    offline stand-in (SAMPLE_LOCATION)."""
    return list(read_documents(paloma_sample() if location == SAMPLE_LOCATION else location, split, sources))


def paloma_windows(
    texts: Sequence[str], tokenizer_name: str, window: int, tokens_per_batch: int
) -> Iterator[WindowBatch]:
    """The texts tokenized and cut into scoring windows of at most ``window`` positions (tasks.lm.paloma_windows),
    each text's first token predicted from the end-of-text token."""
    return window_batches(
        tokenize(texts, tokenizer_name), window, tokens_per_batch, tokenizer(tokenizer_name).end_of_text
    )


def validation_sequences(config: LMTaskConfig, count: int):
    """Inputs and targets (count, L) each: the first ``count`` validation sequences of the task at its context length
    L (ValueError naming the setting when its validation part is too short)."""
    from tasks.lm.data import part_tokens  # torch and Lightning: only when a model is evaluated
    from tasks.lm.sequences import TokenWindows

    config = replace(config, val_sequences=count)
    return TokenWindows(part_tokens(config, "validation"), config.context_length).samples(np.arange(count))


TEXT = Text(
    tokenizer=tokenizer,
    encoding=encoding,
    paloma=Paloma(HUB_ID, SPLITS, SOURCES, SAMPLE_LOCATION, paloma_documents, paloma_windows),
    harness_stand_ins={SAMPLE_TASK_DIR: lmeval_sample, OFFLINE_TASK_DIR: lmeval_offline},
)
