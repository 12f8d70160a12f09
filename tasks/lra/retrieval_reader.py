"""Reader of the LRA retrieval release (AAN, tsv_data/new_aan_pairs.{train,eval,test}.tsv).

A record is five tab-separated fields without a header: label, id of the first document, id of the second, text of
the first, text of the second (state-spaces/s4's AAN loader names the columns so: label, input1_id, input2_id, text1,
text2). The label is 0 or 1 (also written 0.0 / 1.0): whether the two papers are linked by a citation. Documents
are byte-level: a text's UTF-8 bytes, cut to ``max_length`` (the LRA: 4,000 bytes per document), token = byte + 1
(0 is padding). Records are read as csv's tab-separated dialect reads them (a field in double quotes loses its quotes
and may hold tabs), as pandas, which state-spaces/s4's loader goes through, reads them too.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from tasks.lra.release_format import ReleaseFormatError, missing_file
from tasks.lra.sets import RaggedTokens, TokenPairSet

SPLIT_FILES = {"train": "new_aan_pairs.train.tsv", "val": "new_aan_pairs.eval.tsv", "test": "new_aan_pairs.test.tsv"}
LINE_FORMAT = "'<label 0|1>\\t<id1>\\t<id2>\\t<text1>\\t<text2>' (five tab-separated fields, non-empty texts)"
LABELS = {"0": 0, "1": 1, "0.0": 0, "1.0": 1}


def byte_tokens(text: str, max_length: int) -> np.ndarray:
    """(<= max_length,) uint16: the text's UTF-8 bytes + 1, cut to max_length."""
    return np.frombuffer(text.encode("utf-8")[:max_length], dtype=np.uint8).astype(np.uint16) + 1


def read_retrieval(path: Path, max_length: int) -> TokenPairSet:
    """The document pairs of one AAN TSV file; ReleaseFormatError at its first malformed line."""
    path = Path(path)
    if not path.is_file():
        raise missing_file(path, "an AAN retrieval split, tsv_data/new_aan_pairs.<split>.tsv")
    first, second, labels = [], [], []
    csv.field_size_limit(max(csv.field_size_limit(), 2**31 - 1))  # a document may exceed csv's default 131,072
    with open(path, encoding="utf-8", newline="") as handle:
        records = csv.reader(handle, delimiter="\t")
        number = 1
        for fields in records:
            where, number = f"line {number}", records.line_num + 1
            if len(fields) != 5:
                raise ReleaseFormatError(path, where, f"{len(fields)} tab-separated fields", LINE_FORMAT)
            label, _, _, text1, text2 = fields
            if label.strip() not in LABELS:
                raise ReleaseFormatError(path, where, f"label {label!r}", LINE_FORMAT)
            if not text1 or not text2:
                raise ReleaseFormatError(path, where, "an empty document", LINE_FORMAT)
            labels.append(LABELS[label.strip()])
            first.append(byte_tokens(text1, max_length))
            second.append(byte_tokens(text2, max_length))
    if not labels:
        raise ReleaseFormatError(path, "line 1", "no samples", LINE_FORMAT)
    return TokenPairSet(
        RaggedTokens.from_sequences(first), RaggedTokens.from_sequences(second), np.array(labels, dtype=np.int64)
    )


def read_retrieval_split(folder: Path, split: str, max_length: int) -> TokenPairSet:
    """Split ``split`` (train, val, test) of the release folder tsv_data."""
    return read_retrieval(Path(folder) / SPLIT_FILES[split], max_length)
