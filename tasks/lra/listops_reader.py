"""Reader of the LRA ListOps release (listops-1000/basic_{train,val,test}.tsv).

A file is a header line ``Source<TAB>Target`` and one sample per line: the source (see listops_tokens) and its value,
a digit 0-9. Every line is checked; the first malformed one raises ReleaseFormatError naming the file and line.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tasks.lra.listops_tokens import TOKEN_IDS, split_source
from tasks.lra.release_format import ReleaseFormatError, missing_file
from tasks.lra.sets import RaggedTokens, TokenSequenceSet

HEADER = "Source\tTarget"
SPLIT_FILES = {"train": "basic_train.tsv", "val": "basic_val.tsv", "test": "basic_test.tsv"}
LINE_FORMAT = (
    f"'<source>\\t<target>': a source of the tokens {sorted(TOKEN_IDS)} and parentheses, and a target digit 0-9"
)


def read_listops(path: Path, max_length: int) -> TokenSequenceSet:
    """The samples of one ListOps TSV file; ReleaseFormatError at its first malformed line (a source longer than
    ``max_length`` tokens is one)."""
    path = Path(path)
    if not path.is_file():
        raise missing_file(path, "a ListOps split, listops-1000/basic_<split>.tsv")
    sequences, labels = [], []
    with open(path, encoding="utf-8") as handle:
        header = handle.readline().rstrip("\r\n")
        if header != HEADER:
            raise ReleaseFormatError(path, "line 1", f"header {header!r}", f"the header {HEADER!r}")
        for number, line in enumerate(handle, start=2):
            tokens, label = parse_line(line.rstrip("\r\n"), path, number, max_length)
            sequences.append(tokens)
            labels.append(label)
    if not labels:
        raise ReleaseFormatError(path, "line 2", "no samples after the header", LINE_FORMAT)
    return TokenSequenceSet(RaggedTokens.from_sequences(sequences, dtype=np.uint8), np.array(labels, dtype=np.int64))


def parse_line(line: str, path: Path, number: int, max_length: int) -> tuple[np.ndarray, int]:
    fields = line.split("\t")
    where = f"line {number}"
    if len(fields) != 2:
        raise ReleaseFormatError(path, where, f"{len(fields)} tab-separated fields", LINE_FORMAT)
    source, target = fields
    if target.strip() not in [str(digit) for digit in range(10)]:
        raise ReleaseFormatError(path, where, f"target {target!r}", LINE_FORMAT)
    words = split_source(source)
    unknown = [word for word in words if word not in TOKEN_IDS]
    if unknown or not words:
        raise ReleaseFormatError(
            path, where, f"unknown token {unknown[0]!r}" if unknown else "an empty source", LINE_FORMAT
        )
    if len(words) > max_length:
        raise ReleaseFormatError(path, where, f"{len(words)} tokens", f"at most max_length={max_length} tokens")
    return np.array([TOKEN_IDS[word] for word in words], dtype=np.uint8), int(target)


def read_listops_split(folder: Path, split: str, max_length: int) -> TokenSequenceSet:
    """Split ``split`` (train, val, test) of the release folder listops-1000."""
    return read_listops(Path(folder) / SPLIT_FILES[split], max_length)
