"""A tiny offline stand-in for PALOMA in its layout (tasks.lm.paloma): two sonnets of the sample corpus
(tasks/lm/sample_corpus) per source and split, for the 16 sources, ``<source>/<split>/<split>.jsonl.gz``; each
source but c4_en and 4chan_meta_sep (which have no domains in PALOMA) gives its two documents two subdomains. The
smoke scale's PALOMA evaluation reads it; it is written on first use into the data cache folder (about 20 KB) and
reads back the same on every machine (gzip without a time stamp, files written whole)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from tasks.data_cache import DEFAULT_FOLDER, cache_folder
from tasks.lm.paloma import SOURCES, SPLITS
from tasks.lm.whole_file import write_whole

SAMPLE_LOCATION = "sample"  # the ``location`` setting that names this stand-in
SAMPLE_CORPUS = Path(__file__).resolve().parent / "sample_corpus"
WITHOUT_DOMAINS = ("c4_en", "4chan_meta_sep")
DOCUMENTS_PER_FILE = 2


def sample_records(source: str, split: str) -> list[dict]:
    """The documents of one source and split: consecutive sonnets, a different pair for every source and split."""
    sonnets = sorted(SAMPLE_CORPUS.glob("*.txt"))
    first = (list(SOURCES).index(source) * len(SPLITS) + SPLITS.index(split)) * DOCUMENTS_PER_FILE
    records = []
    for offset, path in enumerate(sonnets[first : first + DOCUMENTS_PER_FILE]):
        record = {"text": path.read_text(encoding="utf-8"), "id": path.stem, "source": source}
        if source not in WITHOUT_DOMAINS:
            record["subdomain"] = f"{source}/domain-{offset}"
        records.append(record)
    return records


def paloma_sample(folder: Path | None = None) -> Path:
    """The stand-in's root folder, written first where it is missing."""
    root = folder or (cache_folder() or DEFAULT_FOLDER) / "paloma-sample"
    for source in SOURCES:
        for split in SPLITS:
            path = root / source / split / f"{split}.jsonl.gz"
            if not path.exists():
                lines = "".join(json.dumps(record, sort_keys=True) + "\n" for record in sample_records(source, split))
                write_whole(path, gzip.compress(lines.encode("utf-8"), mtime=0))
    return root
