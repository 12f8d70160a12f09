"""Retrieval pairs drawn here from the offline corpus (tasks/lm/offline_corpus.py, `make corpus`): the stand-in for
the LRA's AAN pairs (do two papers cite each other, from their bytes), which our machines cannot reach. A pair is two
byte windows of ``length`` bytes each, label 1 when both come from one document (two windows that do not overlap),
0 when they come from two documents of the same source (the kernel's documentation, Python's, or Shakespeare's
plays), so that telling them apart takes the content of both windows, not their source's style alone.

Every window is exactly ``length`` bytes of a document of at least 2 x ``length`` bytes (for either label), so a
window's length says nothing about its label. A document belongs to one split by its held-out part
(tasks.lm.splits.held_out_part, HOLDOUT_FRACTION: the offline_docs task's): validation and test pairs are made of
documents that no training pair reads. Each pair is positive with probability 1/2; its two windows are in a random
order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tasks.lm.corpus import corpus_fingerprint, document_batches
from tasks.lm.splits import held_out_part

SOURCES = ("linux-doc", "python-doc", "shakespeare")  # the offline corpus docs, one source at a time
HOLDOUT_FRACTION = 0.05  # configs/task/offline_docs.yaml's
PARTS = {"train": "train", "val": "validation", "test": "test"}


def corpus_content() -> dict:
    """What identifies the documents the pairs are drawn from, for the data cache's key (another installed corpus
    gives other pairs); FileNotFoundError naming `make corpus` where it is not installed."""
    return {source: corpus_fingerprint(f"offline:{source}", "train") for source in SOURCES}


def split_documents(split: str, length: int) -> list[list[bytes]]:
    """Per source, the UTF-8 bytes of its documents in ``split`` (train, val, test) of at least 2 x ``length`` bytes;
    FileNotFoundError naming `make corpus` where the corpus is not installed."""
    part = PARTS[split]
    documents = []
    for source in SOURCES:
        texts = (text for batch in document_batches(f"offline:{source}", "train", "text") for text in batch)
        documents.append(
            [
                text.encode("utf-8")
                for text in texts
                if held_out_part(text, HOLDOUT_FRACTION) == part and len(text.encode("utf-8")) >= 2 * length
            ]
        )
    return documents


def window(document: bytes, start: int, length: int) -> np.ndarray:
    """(length,) uint16: the window's bytes + 1 (0 is padding), as tasks.lra.retrieval_reader tokenises."""
    return np.frombuffer(document[start : start + length], dtype=np.uint8).astype(np.uint16) + 1


def draw_pair(rng: np.random.Generator, documents: Sequence[bytes], positive: bool, length: int) -> np.ndarray:
    """(2, length) uint16: two windows of one document (positive) or of two different documents."""
    if positive:
        document = documents[rng.integers(len(documents))]
        first = int(rng.integers(0, len(document) - 2 * length + 1))
        second = int(rng.integers(first + length, len(document) - length + 1))  # after the first, not overlapping
        pair = [window(document, first, length), window(document, second, length)]
    else:
        one, other = rng.choice(len(documents), size=2, replace=False)
        pair = [
            window(documents[index], int(rng.integers(0, len(documents[index]) - length + 1)), length)
            for index in (one, other)
        ]
    return np.stack(pair if rng.random() < 0.5 else pair[::-1])


def generate(
    documents: Sequence[Sequence[bytes]], samples: int, rng: np.random.Generator, length: int
) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (N, 2, length) uint16 and labels (N,) int64 from ``documents`` (per source, each of at least 2 x
    ``length`` bytes); a pair's source is drawn in proportion to its documents, among sources with at least two.
    ValueError where no source has two documents."""
    usable = [source for source in documents if len(source) >= 2]
    if not usable:
        raise ValueError(
            f"no source has two documents of at least {2 * length} bytes: the pairs need them (a shorter length?)"
        )
    weights = np.array([len(source) for source in usable], dtype=float)
    labels = rng.integers(0, 2, size=samples)  # (N,)
    sources = rng.choice(len(usable), size=samples, p=weights / weights.sum())  # (N,)
    pairs = np.stack(
        [draw_pair(rng, usable[source], bool(label), length) for source, label in zip(sources, labels, strict=True)]
    )
    return pairs, labels.astype(np.int64)
