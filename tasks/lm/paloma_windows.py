"""Documents cut into scoring windows as the xLSTM paper evaluates PALOMA (Appendix "Details on PALOMA"): "we split
the text documents into sequences of length 2048 ... For documents longer than 2048 tokens we split each document
into non-overlapping input sequences. In this case for the last input sequence, we follow the LM Evaluation Harness
and fill up the full 2048 token context window with previous tokens, but compute the perplexity only on the
remaining tokens."

A document's tokens t_0 .. t_{N-1} (GPT-2 BPE, special-token text as plain text, as the token cache encodes
training documents) are predicted from the input stream <|endoftext|>, t_0 .. t_{N-2}: input position p predicts
t_p. The first token is scored too, conditioned on the end-of-text token alone; this is PALOMA's convention (its
inference code, catwalk's ``predict_chunk_perplexity``, builds lm-evaluation-harness's rolling windows with
``prefix_token=tokenizer.eos_token_id`` and ``context_len=1``), and it is how our models saw a document's start in
training, where every document follows the previous one's end-of-text. So every token of every document is scored
exactly once and a document of N tokens counts N tokens.

Windows of at most ``window`` input positions score consecutive, non-overlapping runs of ``window`` tokens; the last
run (fewer tokens) gets a window of ``window`` positions ending at the document's end, the positions before the run
only as context. A document of at most ``window`` tokens is one window of its own length.

``window_batches`` packs the windows of many documents into (inputs, targets, scored mask) arrays: windows sorted
longest first, each batch padded to its longest window and holding at most ``tokens_per_batch`` positions, each
window tied to its document by index. Padding sits after a window's last position, which causal models never read
for the scored positions.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from tasks.lm.tokenizer import encoding


@dataclass(frozen=True)
class Window:
    """Input positions [start, end) of a document; the targets of positions [scored_from, end) are scored."""

    document: int
    start: int
    scored_from: int
    end: int

    @property
    def length(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class WindowBatch:
    inputs: np.ndarray  # (B, S) int64: the model's input tokens, S <= window
    targets: np.ndarray  # (B, S) int64: the token each input position predicts
    scored: np.ndarray  # (B, S) bool: the positions whose target is scored (False on padding)
    document: np.ndarray  # (B,) int64: the index of each window's document


def tokenize(texts: Iterable[str], tokenizer_name: str = "gpt2") -> list[np.ndarray]:
    """Each text's token ids (special-token text encoded as plain text, no end-of-text appended)."""
    return [np.asarray(ids, dtype=np.int64) for ids in encoding(tokenizer_name).encode_ordinary_batch(list(texts))]


def document_windows(document: int, length: int, window: int) -> list[Window]:
    """The windows of a document of ``length`` tokens (none for an empty document)."""
    windows = []
    for scored_from in range(0, length, window):
        end = min(scored_from + window, length)
        windows.append(Window(document, max(0, end - window), scored_from, end))
    return windows


def window_batches(
    documents: Sequence[Sequence[int]], window: int, tokens_per_batch: int, start_token: int
) -> Iterator[WindowBatch]:
    """The windows of all ``documents`` (token ids each) in batches; ``start_token`` is what the first token is
    predicted from (the tokenizer's end-of-text, tasks.lm.tokenizer.tokenizer(name).end_of_text)."""
    if window < 1:
        raise ValueError(f"window={window} must be a positive number of tokens (the paper's is 2048)")
    if tokens_per_batch < window:
        raise ValueError(f"tokens_per_batch={tokens_per_batch} must hold one whole window of {window} tokens")
    streams = [np.asarray(tokens, dtype=np.int64) for tokens in documents]
    windows = [each for index, tokens in enumerate(streams) for each in document_windows(index, len(tokens), window)]
    windows.sort(key=lambda each: -each.length)  # stable: equal lengths keep document order
    first = 0
    while first < len(windows):
        rows = windows[first : first + tokens_per_batch // windows[first].length]
        yield _batch(rows, streams, start_token)
        first += len(rows)


def _batch(rows: list[Window], streams: list[np.ndarray], start_token: int) -> WindowBatch:
    width = rows[0].length
    inputs = np.full((len(rows), width), start_token, dtype=np.int64)  # (B, S)
    targets = np.full((len(rows), width), start_token, dtype=np.int64)  # (B, S)
    scored = np.zeros((len(rows), width), dtype=bool)  # (B, S)
    for row, each in enumerate(rows):
        tokens = streams[each.document]
        # input position p holds t_{p-1}; position 0 holds start_token (already there)
        first_input = 1 if each.start == 0 else 0
        inputs[row, first_input : each.length] = tokens[each.start + first_input - 1 : each.end - 1]
        targets[row, : each.length] = tokens[each.start : each.end]
        scored[row, each.scored_from - each.start : each.length] = True
    return WindowBatch(inputs, targets, scored, np.array([each.document for each in rows], dtype=np.int64))
