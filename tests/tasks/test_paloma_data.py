"""PALOMA's data (tasks/lm/paloma, tasks/lm/paloma_windows): the 16 sources the paper uses, the reader on a local
copy in PALOMA's layout that the tests write, and the windows (a small window of 8 tokens): every token scored once,
the last window filled with the tokens before it, checked against lm-evaluation-harness's rolling windows where the
harness is installed."""

import gzip
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from tasks.lm.paloma import HUB_ID, LEFT_OUT, SOURCES, read_documents
from tasks.lm.paloma_windows import document_windows, tokenize, window_batches

START = 0  # the start token of the fake documents below (their own tokens are >= 1)
WINDOW = 8
# fake documents: lengths below, equal to, a multiple of and above the window, and empty
LENGTHS = (5, 8, 16, 19, 1, 0)


def write_source(root: Path, source: str, split: str, files: dict[str, list[dict]]) -> None:
    folder = root / source / split
    folder.mkdir(parents=True)
    for name, records in files.items():
        with gzip.open(folder / name, "wt", encoding="utf-8") as file:
            file.writelines(json.dumps(record) + "\n" for record in records)


@pytest.fixture
def paloma_copy(tmp_path) -> Path:
    """Two sources in PALOMA's layout: c4_100_domains with a subdomain field over two files, c4_en without one."""
    write_source(
        tmp_path,
        "c4_100_domains",
        "val",
        {
            "val_www.a.com.jsonl.gz": [
                {"text": "alpha one", "id": "a1", "subdomain": "www.a.com", "source": "c4"},
                {"text": "alpha two", "id": "a2", "subdomain": "www.a.com", "source": "c4"},
            ],
            "val_www.b.com.jsonl.gz": [{"text": "beta", "id": "b1", "subdomain": "www.b.com", "source": "c4"}],
        },
    )
    write_source(tmp_path, "c4_en", "val", {"val.jsonl.gz": [{"text": "plain", "id": "c1", "added": "2023"}]})
    write_source(tmp_path, "c4_en", "test", {"test.jsonl.gz": [{"text": "held out", "id": "t1"}]})
    return tmp_path


def fake_documents() -> list[np.ndarray]:
    """Token ids naming their document and position (100 * document + position + 1), so a target says where it is."""
    return [100 * document + np.arange(length) + 1 for document, length in enumerate(LENGTHS)]


def scored_targets(batches) -> list[tuple[int, int]]:
    """(document, position) of every scored target, in the order scored."""
    return [(int(target) // 100, int(target) % 100 - 1) for batch in batches for target in batch.targets[batch.scored]]


# --- sources and reader -----------------------------------------------------------------------------------------


def test_the_paper_uses_16_of_palomas_18_sources():
    assert len(SOURCES) == 16 and len(set(SOURCES.values())) == 16
    assert set(LEFT_OUT) == {"The Pile", "ICE"}
    assert all("not part of Paloma's Huggingface dataset repository" in reason for reason in LEFT_OUT.values())


def test_the_reader_reads_palomas_layout(paloma_copy):
    documents = list(read_documents(paloma_copy, "val", ["c4_100_domains", "c4_en"]))
    assert [(d.source, d.subdomain, d.id, d.text) for d in documents] == [
        ("c4_100_domains", "www.a.com", "a1", "alpha one"),
        ("c4_100_domains", "www.a.com", "a2", "alpha two"),
        ("c4_100_domains", "www.b.com", "b1", "beta"),
        ("c4_en", "c4_en", "c1", "plain"),  # no subdomain field: the source is its one domain
    ]
    assert [d.text for d in read_documents(paloma_copy, "test", ["c4_en"])] == ["held out"]


def test_the_hub_id_streams_palomas_configs_with_datasets(monkeypatch):
    """Without the hub here: datasets.load_dataset is asked for the config and split, and its records are read as
    a local file's lines are."""
    import datasets

    asked = []

    def load_dataset(path, name, split, streaming):
        asked.append((path, name, split, streaming))
        return [{"text": "from the hub", "id": "h1", "subdomain": None, "source": "ptb"}]

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    documents = list(read_documents(HUB_ID, "test", ["ptb", "gab"]))
    assert asked == [(HUB_ID, "ptb", "test", True), (HUB_ID, "gab", "test", True)]
    assert [(d.source, d.subdomain, d.id, d.text) for d in documents] == [
        ("ptb", "ptb", "h1", "from the hub"),
        ("gab", "gab", "h1", "from the hub"),
    ]


def test_a_malformed_line_is_an_error_naming_file_and_line(tmp_path):
    records = [{"text": "fine", "id": "1"}]
    write_source(tmp_path, "gab", "val", {"val.jsonl.gz": records})
    path = tmp_path / "gab" / "val" / "val.jsonl.gz"
    for bad_line, complaint in (
        ('{"text": "cut', "malformed JSON line"),
        ('["text"]', "a JSON object, not list"),
        ('{"id": "2"}', "string field 'text'"),
        ('{"text": "x", "subdomain": 3}', "'subdomain' is 3"),
    ):
        with gzip.open(path, "wt", encoding="utf-8") as file:
            file.write(json.dumps(records[0]) + "\n" + bad_line + "\n")
        with pytest.raises(ValueError, match=f"{path}:2: .*{complaint}"):
            list(read_documents(tmp_path, "val", ["gab"]))
    path.write_bytes(b"not gzip")
    with pytest.raises(ValueError, match=f"{path} is not a readable gzipped"):
        list(read_documents(tmp_path, "val", ["gab"]))


def test_bad_requests_are_errors_before_reading(paloma_copy):
    with pytest.raises(ValueError, match=r"unknown PALOMA split 'validation'; valid choices: \['val', 'test'\]"):
        read_documents(paloma_copy, "validation")
    with pytest.raises(ValueError, match=r"unknown PALOMA sources \['pile'\]"):
        read_documents(paloma_copy, "val", ["pile"])
    with pytest.raises(FileNotFoundError, match=f"no PALOMA folder {paloma_copy / 'gab' / 'val'}.*{HUB_ID}"):
        read_documents(paloma_copy, "val", ["c4_en", "gab"])


# --- windows ----------------------------------------------------------------------------------------------------


def test_every_token_of_every_document_is_scored_exactly_once():
    documents = fake_documents()
    for tokens_per_batch in (WINDOW, 3 * WINDOW, 1000):
        counts = Counter(scored_targets(window_batches(documents, WINDOW, tokens_per_batch, START)))
        expected = {(document, position) for document, length in enumerate(LENGTHS) for position in range(length)}
        assert set(counts) == expected and set(counts.values()) == {1}


def test_each_input_position_holds_the_token_before_its_target():
    """The first token of a document is predicted from the start token alone (PALOMA's prefix token)."""
    documents = fake_documents()
    for batch in window_batches(documents, WINDOW, 1000, START):
        for inputs, targets, scored, document in zip(batch.inputs, batch.targets, batch.scored, batch.document):
            length = int((targets != START).sum())
            stream = np.concatenate([[START], documents[document]])
            first = int(targets[0]) % 100 - 1  # the document position of the window's first target
            assert list(inputs[:length]) == list(stream[first : first + length])
            assert not scored[length:].any()  # padding is never scored


def test_the_last_window_is_filled_with_the_tokens_before_it():
    """19 tokens, window 8: tokens 0-7 and 8-15 in windows of their own, then 16-18 scored in a window of 8 positions
    whose first 5 only give context (tokens 10-15 as inputs)."""
    assert [(w.start, w.scored_from, w.end) for w in document_windows(3, 19, WINDOW)] == [
        (0, 0, 8),
        (8, 8, 16),
        (11, 16, 19),
    ]
    batch = next(b for b in window_batches([fake_documents()[3]], WINDOW, WINDOW, START) if not b.scored[0, 0])
    tokens = fake_documents()[3]
    assert list(batch.inputs[0]) == list(tokens[10:18])
    assert list(batch.targets[0]) == list(tokens[11:19])
    assert list(batch.scored[0]) == [False] * 5 + [True] * 3


def test_batches_keep_to_the_token_budget_longest_windows_first():
    batches = list(window_batches(fake_documents(), WINDOW, 3 * WINDOW, START))
    # windows of 8 positions (six), 5 and 1: three to a batch of 8, then the 5 and the 1 together
    assert [batch.inputs.shape for batch in batches] == [(3, 8), (3, 8), (2, 5)]
    assert all(batch.inputs.size <= 3 * WINDOW for batch in batches)
    assert sum(len(batch.document) for batch in batches) == 1 + 1 + 2 + 3 + 1  # windows per document


def test_bad_window_settings_are_errors():
    with pytest.raises(ValueError, match="window=0 must be a positive"):
        next(window_batches(fake_documents(), 0, 8, START))
    with pytest.raises(ValueError, match="tokens_per_batch=4 must hold one whole window of 8"):
        next(window_batches(fake_documents(), 8, 4, START))


def test_windows_are_lm_evaluation_harness_rolling_windows():
    """PALOMA's inference code (catwalk) scores get_rolling_token_windows(tokens, prefix_token=eos, max_seq_len,
    context_len=1); ours must give the same (inputs, scored targets) per window."""
    harness = pytest.importorskip("lm_eval.utils")
    documents = fake_documents()
    ours = Counter()
    for batch in window_batches(documents, WINDOW, 1000, START):
        for inputs, targets, scored in zip(batch.inputs, batch.targets, batch.scored):
            length = int(np.flatnonzero(scored)[-1]) + 1
            ours[(tuple(inputs[:length]), tuple(targets[scored]))] += 1
    theirs = Counter(
        (tuple(inputs), tuple(predicted))
        for tokens in documents
        for inputs, predicted in harness.get_rolling_token_windows(
            token_list=tokens.tolist(), prefix_token=START, max_seq_len=WINDOW, context_len=1
        )
    )
    assert ours == theirs


def test_tokenize_encodes_special_token_text_as_plain_text():
    ids = tokenize(["Hello world", "a <|endoftext|> b"])
    assert list(ids[0]) == [15496, 995]
    assert 50256 not in ids[1]
