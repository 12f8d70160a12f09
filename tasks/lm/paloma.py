"""PALOMA's documents (Magnusson et al. 2023), the 16 sources the xLSTM paper evaluates on (Appendix "Details on
PALOMA"), read from a local copy of the hub repository or from the hub.

Layout, as its users read it (looked up, not guessed):
- hub id ``allenai/paloma``, one config per source; lm-evaluation-harness's ``tasks/paloma/_paloma_template`` loads
  ``dataset_path: allenai/paloma`` with ``validation_split: val`` and ``test_split: test``, one ``dataset_name`` per
  source (the 16 names of SOURCES below);
- a clone of the repository (``git clone https://huggingface.co/datasets/allenai/paloma``, OLMo-Eval's
  ``paloma/README.md``) holds a folder per source and per split: OLMo-Eval's task set
  ``configs/task_sets/paloma_hf_release_val.libsonnet`` points catwalk at ``paloma/<source>/val``, whose
  ``PerplexityJsonLTask`` reads every ``*.jsonl.gz`` under it (marin reads ``<source>/val/val*.jsonl.gz``);
- each line one JSON document; the dataset card's ``dataset_info`` lists per config the features ``text``, ``id``,
  ``added``, ``source`` and ``metadata``, and ``subdomain`` for the sources with domains (e.g. ``c4_100_domains``,
  ``dolma-v1_5``; ``c4_en`` and ``4chan_meta_sep`` have none).

A document's domain is its ``subdomain`` field, else its source (a source without domains is one domain): OLMo-Eval's
``ProcessOutputs`` (``olmo_eval/steps/run_catwalk.py``) groups perplexity by the ``subdomain`` field when the
documents have it. The source is the folder (the hub config), which names the paper's table columns; the
documents' own ``source`` field is not used.

``read_documents`` reads a local folder (tests, machines without the hub) or, given the hub id, streams the configs
with HF ``datasets`` (a machine that reaches the hub and has accepted the dataset's licence). A malformed line is an
error naming its file and line.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

HUB_ID = "allenai/paloma"
SPLITS = ("val", "test")
FILE_PATTERN = "*.jsonl.gz"

# hub config (folder) -> the source as the xLSTM paper's Appendix "Details on PALOMA" names it, in its order
SOURCES = {
    "c4_en": "C4",
    "mc4": "MC4-EN",
    "wikitext_103": "Wikitext-103",
    "ptb": "PennTreebank",
    "redpajama": "RedPajama",
    "falcon-refinedweb": "Falcon Refinedweb",
    "dolma-v1_5": "Dolma v1.5",
    "m2d2_s2orc_unsplit": "M2D2 S2ORC",
    "m2d2_wikipedia_unsplit": "M2D2 Wikipedia",
    "c4_100_domains": "C4-100-Domains",
    "dolma_100_subreddits": "Dolma-100-Subreddits",
    "dolma_100_programing_languages": "Dolma-100-Programming Languages",
    "twitterAAE_HELM_fixed": "TwitterAAE",
    "manosphere_meta_sep": "Manosphere Corpus",
    "gab": "GAB Corpus",
    "4chan_meta_sep": "4CHAN Corpus",
}
# the two of PALOMA's 18 sources the paper leaves out, with its reason
LEFT_OUT = {
    "The Pile": "not part of Paloma's Huggingface dataset repository",
    "ICE": "not part of Paloma's Huggingface dataset repository",
}


@dataclass(frozen=True)
class PalomaDocument:
    source: str  # hub config, a key of SOURCES
    subdomain: str  # the document's subdomain field, else its source
    id: str
    text: str


def read_documents(location: str | Path, split: str, sources: Iterable[str] = SOURCES) -> Iterator[PalomaDocument]:
    """The documents of ``sources`` in ``split``, source by source: from the local folder ``location`` (a clone of
    the hub repository; files in sorted order, lines in file order) or from the hub when ``location`` is HUB_ID.
    The split, the sources and the local folders are checked here, before anything is read."""
    sources = list(sources)
    _check_request(split, sources)
    if str(location) == HUB_ID and not Path(HUB_ID).exists():
        return chain.from_iterable(_hub_documents(source, split) for source in sources)
    files = {source: source_files(Path(location), source, split) for source in sources}
    return chain.from_iterable(_file_documents(path, source) for source, paths in files.items() for path in paths)


def _check_request(split: str, sources: list[str]) -> None:
    if split not in SPLITS:
        raise ValueError(f"unknown PALOMA split {split!r}; valid choices: {list(SPLITS)}")
    unknown = [source for source in sources if source not in SOURCES]
    if unknown:
        raise ValueError(f"unknown PALOMA sources {unknown}; valid choices: {list(SOURCES)}")


def source_files(root: Path, source: str, split: str) -> list[Path]:
    """The ``*.jsonl.gz`` files under ``root/source/split``, sorted."""
    folder = root / source / split
    if not folder.is_dir():
        raise FileNotFoundError(
            f"no PALOMA folder {folder} (the layout <root>/<source>/<split>/*.jsonl.gz of "
            f"`git clone https://huggingface.co/datasets/{HUB_ID}`)"
        )
    files = sorted(folder.rglob(FILE_PATTERN))
    if not files:
        raise FileNotFoundError(f"the PALOMA folder {folder} holds no {FILE_PATTERN} files")
    return files


def _file_documents(path: Path, source: str) -> Iterator[PalomaDocument]:
    try:
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                yield _document(_record(line, f"{path}:{number}"), source, f"{path}:{number}")
    except (OSError, EOFError, UnicodeDecodeError) as error:
        raise ValueError(f"{path} is not a readable gzipped UTF-8 file: {error}") from error


def _hub_documents(source: str, split: str) -> Iterator[PalomaDocument]:
    import datasets

    stream = datasets.load_dataset(HUB_ID, source, split=split, streaming=True)
    for index, record in enumerate(stream):
        yield _document(record, source, f"{HUB_ID} {source} {split} record {index}")


def _record(line: str, where: str) -> dict:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise ValueError(f"{where}: malformed JSON line ({error.msg} at column {error.colno}): {line[:80]!r}") from None
    if not isinstance(record, dict):
        raise ValueError(f"{where}: a PALOMA line is a JSON object, not {type(record).__name__}: {line[:80]!r}")
    return record


def _document(record: dict, source: str, where: str) -> PalomaDocument:
    """A document of ``source`` from its record; ``where`` names the record in errors (file and line)."""
    text = record.get("text")
    if not isinstance(text, str):
        raise ValueError(f"{where}: a PALOMA document needs a string field 'text'; its fields: {sorted(record)}")
    subdomain = record.get("subdomain")
    if subdomain is not None and not (isinstance(subdomain, str) and subdomain):
        raise ValueError(f"{where}: field 'subdomain' is {subdomain!r}, not a non-empty string")
    return PalomaDocument(source=source, subdomain=subdomain or source, id=str(record.get("id", where)), text=text)
