"""The text the suite's language-model evaluations read (experiments/evaluation: PALOMA, the LM Evaluation Harness),
through the task registry (``tasks.registry.TEXT``) instead of a family's own modules: tokenizers by name, PALOMA's
documents and scoring windows, the harness's offline sample tasks. The language-modelling family provides it
(tasks/lm/text.py); a task family of text also offers its validation sequences at any context length
(``TaskFamily.validation_sequences``).

Torch-free: the PALOMA settings of a run config are checked against it while a sweep is planned.
"""

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Paloma:
    """PALOMA (Magnusson et al. 2023) as the evaluations read it."""

    hub_id: str  # where its documents are read from by default
    splits: tuple[str, ...]
    sources: Mapping[str, str]  # hub config -> the source as the xLSTM paper names it, in the paper's order
    sample_location: str  # the location that names the offline stand-in (a few documents per source and split)
    # (location, split, sources) -> the documents, each with ``source``, ``subdomain`` and ``text``
    documents: Callable[[str, str, Sequence[str]], list]
    # (texts, tokenizer name, window, tokens per batch) -> batches of scoring windows, each with ``inputs``,
    # ``targets``, ``scored`` and ``document`` arrays: every token of every text scored once
    windows: Callable[[Sequence[str], str, int, int], Iterator]


@dataclass(frozen=True)
class Text:
    tokenizer: Callable[[str], Any]  # name -> the tokenizer's facts (``vocabulary``, ``end_of_text``)
    encoding: Callable[[str], Any]  # name -> its encoder (``encode_ordinary``, ``decode``)
    paloma: Paloma
    # offline stand-ins for the LM Evaluation Harness's downstream tasks, in its task format: the ``task_dir`` setting
    # that names each -> its folder of task YAMLs and data, written on first use
    harness_stand_ins: Mapping[str, Callable[[], Path]]
