"""Documents tokenised once into a flat stream of uint16 token ids kept on disk, keyed by a hash of what makes them.

Each document is encoded (tiktoken's ``encode_ordinary_batch`` on all cores' threads; special-token text in a
document is plain text) and followed by the end-of-text token, so the stream marks every document boundary; reading
stops at ``max_tokens`` (a smoke or mini run reads only the start of a corpus).

An entry is ``<folder>/lm/<hash>.tokens`` (the raw uint16 stream, read as a memmap) and ``<hash>.json`` (its
index: the settings it was made from, its token count, a SHA-256 of the stream, the time it took).
The stream is written to a temporary file and renamed, then the index; an entry whose index is missing or of other
settings, or whose stream has another size or checksum (truncated, corrupted), is rebuilt with one line on stderr
and never read. Folder: the data cache's ($XLSTM_SUITE_DATA_CACHE, else results/cache/); with the cache off, the
tokens are made in memory.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from collections.abc import Iterable, Iterator
from itertools import chain
from pathlib import Path

import numpy as np
from tqdm import tqdm

from tasks.data_cache import cache_folder
from tasks.lm.corpus import document_batches
from tasks.lm.wikitext import DOCUMENT_LAYOUTS
from tasks.lm.tokenizer import TOKENIZERS, encoding, tokenizer
from tasks.lm.whole_file import whole_file, write_whole

TOKEN_DTYPE = np.uint16  # GPT-2's 50,257 ids fit
FORMAT_VERSION = 1  # part of the key: bump it when the same settings give another stream
CHECKSUM_BLOCK = 1 << 24  # bytes read at a time when checking a stream


def token_threads() -> int:
    return len(os.sched_getaffinity(0))


def cached_tokens(settings: dict, documents: Iterable[list[str]], tokenizer_name: str,
                  max_tokens: int | None) -> np.ndarray:
    """The token stream of ``documents`` (batches of texts) under ``settings`` (JSON; what selects the documents):
    a read-only memmap of the cache entry, made first if it is missing or damaged, or an array when the cache is
    off."""
    key = {"version": FORMAT_VERSION, "documents": settings, "tokenizer": tokenizer_name,
           "ranks_sha256": tokenizer(tokenizer_name).ranks_sha256, "max_tokens": max_tokens}
    folder = cache_folder()
    if folder is None:
        chunks = list(token_chunks(documents, tokenizer_name, max_tokens, describe(settings)))
        return np.concatenate(chunks) if chunks else np.empty(0, TOKEN_DTYPE)
    stream = folder / "lm" / f"{hashlib.sha256(canonical(key).encode()).hexdigest()[:24]}.tokens"
    index = stream.with_suffix(".json")
    if index.exists() or stream.exists():
        problem = entry_problem(stream, index, key)
        if problem is None:
            return read_stream(stream, index)
        print(f"warning: token cache {stream} is {problem}; tokenising it again", file=sys.stderr)
    write_entry(stream, index, key, documents, tokenizer_name, max_tokens)
    return read_stream(stream, index)


def describe(settings: dict) -> str:
    """The documents in words for messages, e.g. ``offline:docs train (validation documents)``."""
    held_out = settings.get("held_out")
    kept = f" ({'/'.join(held_out['keep'])} documents)" if held_out else ""
    return f"{settings.get('corpus')} {settings.get('split')}{kept}"


def canonical(value) -> str:
    return json.dumps(value, sort_keys=True)


def token_chunks(documents: Iterable[list[str]], tokenizer_name: str, max_tokens: int | None,
                 description: str) -> Iterator[np.ndarray]:
    """The stream in chunks (one per batch of documents), each document followed by end-of-text; it stops at
    ``max_tokens`` (the last chunk cut there)."""
    encoder, end_of_text = encoding(tokenizer_name), tokenizer(tokenizer_name).end_of_text
    produced = 0
    with tqdm(total=max_tokens, desc=f"tokenising {description}", unit="tok", unit_scale=True, delay=2,
              file=sys.stderr, disable=None) as bar:
        for batch in documents:
            encoded = encoder.encode_ordinary_batch(batch, num_threads=token_threads())
            chunk = np.fromiter(chain.from_iterable(chain(ids, (end_of_text,)) for ids in encoded), dtype=TOKEN_DTYPE,
                                count=sum(len(ids) + 1 for ids in encoded))
            if max_tokens is not None:
                chunk = chunk[:max_tokens - produced]
            produced += len(chunk)
            bar.update(len(chunk))
            yield chunk
            if max_tokens is not None and produced >= max_tokens:
                return


def write_entry(stream: Path, index: Path, key: dict, documents: Iterable[list[str]], tokenizer_name: str,
                max_tokens: int | None) -> None:
    started, digest, count = time.perf_counter(), hashlib.sha256(), 0
    index.unlink(missing_ok=True)  # an index never describes another stream
    with whole_file(stream) as handle:
        for chunk in token_chunks(documents, tokenizer_name, max_tokens, describe(key["documents"])):
            data = chunk.tobytes()
            handle.write(data)
            digest.update(data)
            count += len(chunk)
    seconds = time.perf_counter() - started
    record = {"key": key, "tokens": count, "sha256": digest.hexdigest(), "seconds": round(seconds, 3)}
    write_whole(index, json.dumps(record, indent=1, sort_keys=True).encode())
    print(f"tokenised {describe(key['documents'])}: {count:,} tokens in {seconds:.1f} s "
          f"({count / max(seconds, 1e-9):,.0f} tokens/s) into {stream}", file=sys.stderr)


def entry_problem(stream: Path, index: Path, key: dict) -> str | None:
    """What is wrong with a cache entry, or None if it reads back whole."""
    try:
        record = json.loads(index.read_text())
        tokens, checksum, stored_key = int(record["tokens"]), str(record["sha256"]), record["key"]
    except FileNotFoundError:
        return "without its index"
    except (OSError, ValueError, KeyError, TypeError) as error:
        return f"of an unreadable index ({type(error).__name__}: {error})"
    if canonical(stored_key) != canonical(key):
        return "the entry of other settings"
    if not stream.exists():
        return "without its token stream"
    size, expected = stream.stat().st_size, tokens * np.dtype(TOKEN_DTYPE).itemsize
    if size != expected:
        return f"{'truncated' if size < expected else 'too long'} ({size} bytes, its index says {expected})"
    digest = hashlib.sha256()
    with open(stream, "rb") as handle:
        while block := handle.read(CHECKSUM_BLOCK):
            digest.update(block)
    if digest.hexdigest() != checksum:
        return "corrupt (checksum mismatch)"
    return None


def read_stream(stream: Path, index: Path) -> np.ndarray:
    tokens = json.loads(index.read_text())["tokens"]
    if tokens == 0:
        return np.empty(0, TOKEN_DTYPE)
    return np.memmap(stream, dtype=TOKEN_DTYPE, mode="r", shape=(tokens,))


def main(argv: list[str] | None = None) -> None:
    """Count a corpus split's documents and tokens and time the tokenising (nothing is written)."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("corpus", help="a hub id, local files, or offline:<name>")
    parser.add_argument("--split", default="train")
    parser.add_argument("--text-field", default="text")
    parser.add_argument("--corpus-config", default=None, help="the hub dataset's configuration, e.g. wikitext-103-raw-v1")
    parser.add_argument("--documents", default="records", choices=DOCUMENT_LAYOUTS)
    parser.add_argument("--tokenizer", default="gpt2", choices=sorted(TOKENIZERS))
    parser.add_argument("--max-tokens", type=int, default=None)
    arguments = parser.parse_args(argv)
    documents = 0

    def counted() -> Iterator[list[str]]:
        nonlocal documents
        for batch in document_batches(arguments.corpus, arguments.split, arguments.text_field,
                                      arguments.corpus_config, arguments.documents):
            documents += len(batch)
            yield batch

    started = time.perf_counter()
    tokens = sum(len(chunk) for chunk in token_chunks(counted(), arguments.tokenizer, arguments.max_tokens,
                                                      f"{arguments.corpus} {arguments.split}"))
    seconds = time.perf_counter() - started
    print(f"{arguments.corpus} {arguments.split}: {documents:,} documents read, {tokens:,} tokens in {seconds:.1f} s "
          f"({tokens / seconds:,.0f} tokens/s on {token_threads()} threads)")


if __name__ == "__main__":
    main()
