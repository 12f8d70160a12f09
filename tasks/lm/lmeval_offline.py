"""The mini scale's offline stand-in for the LM Evaluation Harness's downstream tasks: items made from the offline
corpus's test documents (tasks/lm/offline_corpus.py, `make corpus`), which no training run and no checkpoint choice
reads, in the harness's task format (the YAML templates of tasks.lm.lmeval_sample).

- ``offline_cloze``, LAMBADA's form: the last PASSAGE_WORDS words of a paragraph, whose last word (letters only, its
  punctuation dropped) is the target; acc (the greedy tokens are the word) and perplexity.
- ``offline_choice``, HellaSwag's form: a paragraph's first CONTEXT_WORDS words, and as choices its next
  ENDING_WORDS words and the same span of CHOICES - 1 other paragraphs, in a random order; acc and acc_norm.

A paragraph is a block between blank lines of at least MIN_WORDS words of which at least PROSE_SHARE are plain words
(letters with at most a trailing punctuation mark): prose, not code, tables or a play's speaker lines. ITEMS of each
task are drawn with a fixed seed from every such paragraph, so every model sees the same items. The folder is keyed
by the corpus's content (an installed corpus of other files gives another folder) and written on first use.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from tasks.data_cache import DEFAULT_FOLDER, cache_folder
from tasks.lm.corpus import corpus_fingerprint
from tasks.lm.lmeval_sample import CHOICE_YAML, CLOZE_YAML, write_tasks
from tasks.lm.splits import PartSource

OFFLINE_TASK_DIR = "offline"  # the ``task_dir`` setting that names this stand-in
OFFLINE_TASKS = ("offline_choice", "offline_cloze")
CORPUS, SPLIT, PART = "offline:docs", "train", "test"
HOLDOUT_FRACTION = 0.05  # configs/task/offline_docs.yaml's: its test part is what no training run reads
ITEMS, SEED = 500, 0
MIN_WORDS, PROSE_SHARE = 40, 0.9
PASSAGE_WORDS, CONTEXT_WORDS, ENDING_WORDS, CHOICES = 60, 30, 10, 4
PLAIN_WORD = re.compile(r"[A-Za-z]+[.,;:!?]?")
TARGET_WORD = re.compile(r"([A-Za-z]{3,})[.!?]?")


def paragraphs(texts: list[str]) -> Iterator[list[str]]:
    """The prose paragraphs of ``texts``, each as its words."""
    for text in texts:
        for block in re.split(r"\n\s*\n", text):
            words = block.split()
            plain = sum(bool(PLAIN_WORD.fullmatch(word)) for word in words)
            if len(words) >= MIN_WORDS and plain >= PROSE_SHARE * len(words):
                yield words


def cloze_items(prose: list[list[str]], rng: np.random.Generator) -> list[dict]:
    """``offline_cloze``'s records: passages whose last word is a target of letters."""
    candidates = []
    for words in prose:
        target = TARGET_WORD.fullmatch(words[-1])
        if target:
            candidates.append(" ".join([*words[-PASSAGE_WORDS:-1], target.group(1)]))
    chosen = rng.choice(len(candidates), size=min(ITEMS, len(candidates)), replace=False)
    return [{"text": candidates[index]} for index in sorted(chosen)]


def choice_items(prose: list[list[str]], rng: np.random.Generator) -> list[dict]:
    """``offline_choice``'s records: a context, its true ending among CHOICES - 1 other paragraphs' endings."""
    spans = [
        (" ".join(words[:CONTEXT_WORDS]), " ".join(words[CONTEXT_WORDS : CONTEXT_WORDS + ENDING_WORDS]))
        for words in prose
    ]
    chosen = sorted(rng.choice(len(spans), size=min(ITEMS, len(spans)), replace=False))
    records = []
    for index in chosen:
        others = rng.choice([other for other in range(len(spans)) if other != index], CHOICES - 1, replace=False)
        endings = [spans[index][1], *(spans[other][1] for other in others)]
        order = rng.permutation(CHOICES)
        records.append(
            {"question": spans[index][0], "choices": [endings[i] for i in order], "label": int(np.argmin(order))}
        )
    return records


def offline_items() -> dict[str, list[dict]]:
    """Both tasks' records from the corpus's test documents (FileNotFoundError naming `make corpus` where it is not
    installed)."""
    source = PartSource(CORPUS, SPLIT, "text", HOLDOUT_FRACTION, (PART,))
    prose = [words for batch in source.document_batches() for words in paragraphs(batch)]
    rng = np.random.default_rng(SEED)
    return {"offline_cloze": cloze_items(prose, rng), "offline_choice": choice_items(prose, rng)}


def lmeval_offline(folder: Path | None = None) -> Path:
    """The stand-in's task folder for the installed corpus, written first where it is missing."""
    settings = [corpus_fingerprint(CORPUS, SPLIT), HOLDOUT_FRACTION, ITEMS, SEED, MIN_WORDS, PROSE_SHARE]
    settings += [PASSAGE_WORDS, CONTEXT_WORDS, ENDING_WORDS, CHOICES]
    key = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:12]
    root = Path(folder or (cache_folder() or DEFAULT_FOLDER) / f"lmeval-offline-{key}")
    items = functools.cache(offline_items)  # read the corpus once, and only where a task's data is missing
    return write_tasks(
        root,
        {
            "offline_choice": (CHOICE_YAML, lambda: items()["offline_choice"]),
            "offline_cloze": (CLOZE_YAML, lambda: items()["offline_cloze"]),
        },
    )
