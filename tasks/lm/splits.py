"""Which documents feed training, validation and test: disjoint by construction.

A part whose split the config names (SlimPajama's validation and test) reads that split of the corpus. A part
without one is held out of the training split by a hash of each document's text: the first 8 bytes of its SHA-256,
as a fraction of 2**64, put it in validation below ``holdout_fraction``, in test below twice that, else in
training. The hash depends on the text alone (no seed, no order, no position in the corpus), so a document, and
every copy of it, lands in the same part in every run, and training leaves out exactly the held-out documents.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass

from tasks.lm.corpus import corpus_fingerprint, document_batches

PARTS = ("train", "validation", "test")
HELD_OUT_ORDER = ("validation", "test")  # the order of the held-out hash ranges


def held_out_part(text: str, fraction: float) -> str:
    """The part a document of the training split belongs to when validation and test are held out."""
    position = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") / 2**64
    index = int(position // fraction) if fraction > 0 else len(HELD_OUT_ORDER)
    return HELD_OUT_ORDER[index] if index < len(HELD_OUT_ORDER) else "train"


@dataclass(frozen=True)
class PartSource:
    """A part's documents: those of the corpus's ``split`` whose held-out part (under ``holdout_fraction``) is in
    ``keep``; ``keep`` None keeps every document of the split."""

    corpus: str
    split: str
    text_field: str
    holdout_fraction: float
    keep: tuple[str, ...] | None
    corpus_config: str | None = None
    documents: str = "records"

    def settings(self) -> dict:
        """What selects the documents, for the token cache's key (with the content of local files: an edited file
        gives another entry); the hub configuration and the document layout only where they are not the default,
        so the keys of corpora without them stay as they were."""
        selection = None if self.keep is None else {"holdout_fraction": self.holdout_fraction, "keep": list(self.keep)}
        more = {"corpus_config": self.corpus_config} if self.corpus_config is not None else {}
        more |= {"documents": self.documents} if self.documents != "records" else {}
        return {
            "corpus": self.corpus,
            "split": self.split,
            "content": corpus_fingerprint(self.corpus, self.split),
            "text_field": self.text_field,
            "held_out": selection,
            **more,
        }

    def document_batches(self) -> Iterator[list[str]]:
        for batch in document_batches(self.corpus, self.split, self.text_field, self.corpus_config, self.documents):
            kept = (
                batch
                if self.keep is None
                else [text for text in batch if held_out_part(text, self.holdout_fraction) in self.keep]
            )
            if kept:
                yield kept


def part_source(config, part: str) -> PartSource:
    """Where ``part`` (train, validation or test) of an LMTaskConfig reads its documents."""
    if part not in PARTS:
        raise ValueError(f"unknown part {part!r}; valid choices: {list(PARTS)}")
    held_out = tuple(name for name in HELD_OUT_ORDER if config.corpus_split(name) is None)
    if part == "train":
        keep = None if not held_out else tuple(name for name in PARTS if name not in held_out)
        split = config.train_split
    elif part in held_out:
        keep, split = (part,), config.train_split
    else:
        keep, split = None, config.corpus_split(part)
    return PartSource(
        config.corpus, split, config.text_field, config.holdout_fraction, keep, config.corpus_config, config.documents
    )
