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

Many processes open the same entry (the ranks of a SLURM job on many nodes, jobs side by side, `xlstm-suite prepare`,
which makes a sweep's entries before its jobs run): who checks or writes an entry holds an exclusive lock on
``<hash>.lock`` (fcntl's POSIX lock, which network filesystems share across nodes), so an entry is tokenised once
and never read half-written. The checksum is checked once per SLURM job attempt: ``<hash>.verified`` records the jobs
that checked the stream as it is now (its size, modification time and inode), and the job's other processes only
open it; outside SLURM every process checks it.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from itertools import chain
from pathlib import Path

import numpy as np
from tqdm import tqdm

from tasks.data_cache import cache_folder
from tasks.lm.corpus import document_batches
from tasks.lm.tokenizer import TOKENIZERS, encoding, tokenizer
from tasks.lm.whole_file import whole_file, write_whole
from tasks.lm.wikitext import DOCUMENT_LAYOUTS

TOKEN_DTYPE = np.uint16  # GPT-2's 50,257 ids fit
FORMAT_VERSION = 1  # part of the key: bump it when the same settings give another stream
CHECKSUM_BLOCK = 1 << 24  # bytes read at a time when checking a stream
VERIFIED_JOBS_KEPT = 64  # the job attempts a .verified record names, the latest last


def token_threads() -> int:
    return len(os.sched_getaffinity(0))


def cached_tokens(
    settings: dict, documents: Iterable[list[str]], tokenizer_name: str, max_tokens: int | None
) -> np.ndarray:
    """The token stream of ``documents`` (batches of texts) under ``settings`` (JSON; what selects the documents):
    a read-only memmap of the cache entry, made first if it is missing or damaged, or an array when the cache is
    off."""
    key = {
        "version": FORMAT_VERSION,
        "documents": settings,
        "tokenizer": tokenizer_name,
        "ranks_sha256": tokenizer(tokenizer_name).ranks_sha256,
        "max_tokens": max_tokens,
    }
    folder = cache_folder()
    if folder is None:
        chunks = list(token_chunks(documents, tokenizer_name, max_tokens, describe(settings)))
        return np.concatenate(chunks) if chunks else np.empty(0, TOKEN_DTYPE)
    stream = folder / "lm" / f"{hashlib.sha256(canonical(key).encode()).hexdigest()[:24]}.tokens"
    index = stream.with_suffix(".json")
    if not verified_in_this_job(stream, index):  # unless another process of this job checked it
        with entry_lock(stream):
            if not verified_in_this_job(stream, index):  # nor did while this one waited for the lock
                check_or_write(stream, index, key, documents, tokenizer_name, max_tokens)
    return read_stream(stream, index)


def check_or_write(
    stream: Path, index: Path, key: dict, documents: Iterable[list[str]], tokenizer_name: str, max_tokens: int | None
) -> None:
    """Within the entry's lock: write the entry if it is missing or damaged (one line on stderr), and record that
    this job attempt checked it."""
    problem = entry_problem(stream, index, key) if index.exists() or stream.exists() else None
    if problem is not None:
        print(f"warning: token cache {stream} is {problem}; tokenising it again", file=sys.stderr)
    if problem is not None or not index.exists():
        write_entry(stream, index, key, documents, tokenizer_name, max_tokens)
    record_verified(stream, index)


@contextmanager
def entry_lock(stream: Path) -> Iterator[None]:
    """Hold the exclusive lock of an entry (waiting for another process's check or write to end)."""
    stream.parent.mkdir(parents=True, exist_ok=True)
    with open(stream.with_suffix(".lock"), "a") as lock:
        fcntl.lockf(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.lockf(lock, fcntl.LOCK_UN)


def job_attempt() -> str | None:
    """This process's SLURM job attempt (``<job>:<restart count>``, an array element's job as
    ``<array job>_<index>``); None outside SLURM."""
    array_job = os.environ.get("SLURM_ARRAY_JOB_ID")
    job = f"{array_job}_{os.environ.get('SLURM_ARRAY_TASK_ID')}" if array_job else os.environ.get("SLURM_JOB_ID")
    return None if job is None else f"{job}:{os.environ.get('SLURM_RESTART_COUNT', '0')}"


def stream_identity(stream: Path, index: Path) -> dict | None:
    """What changes when the entry is written again: the stream's size, modification time and inode, the index's
    bytes; None when either is missing."""
    try:
        status = stream.stat()
        index_digest = hashlib.sha256(index.read_bytes()).hexdigest()
    except OSError:
        return None
    return {"size": status.st_size, "mtime_ns": status.st_mtime_ns, "inode": status.st_ino, "index": index_digest}


def verified_in_this_job(stream: Path, index: Path) -> bool:
    """Whether a process of this SLURM job attempt checked the entry as it is now (its .verified record)."""
    attempt = job_attempt()
    if attempt is None:
        return False
    try:
        record = json.loads(stream.with_suffix(".verified").read_text())
    except (OSError, ValueError):
        return False
    return attempt in record.get("jobs", []) and record.get("entry") == stream_identity(stream, index)


def record_verified(stream: Path, index: Path) -> None:
    """Within the entry's lock, after a check or a write: this job attempt checked the entry as it is now."""
    attempt, path = job_attempt(), stream.with_suffix(".verified")
    if attempt is None:
        return
    entry = stream_identity(stream, index)
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        record = {}
    jobs = record.get("jobs", []) if record.get("entry") == entry else []
    jobs = [job for job in jobs if job != attempt][-(VERIFIED_JOBS_KEPT - 1) :] + [attempt]
    write_whole(path, json.dumps({"entry": entry, "jobs": jobs}, indent=1).encode())


def describe(settings: dict) -> str:
    """The documents in words for messages, e.g. ``offline:docs train (validation documents)``."""
    held_out = settings.get("held_out")
    kept = f" ({'/'.join(held_out['keep'])} documents)" if held_out else ""
    return f"{settings.get('corpus')} {settings.get('split')}{kept}"


def canonical(value) -> str:
    return json.dumps(value, sort_keys=True)


def token_chunks(
    documents: Iterable[list[str]], tokenizer_name: str, max_tokens: int | None, description: str
) -> Iterator[np.ndarray]:
    """The stream in chunks (one per batch of documents), each document followed by end-of-text; it stops at
    ``max_tokens`` (the last chunk cut there)."""
    encoder, end_of_text = encoding(tokenizer_name), tokenizer(tokenizer_name).end_of_text
    produced = 0
    with tqdm(
        total=max_tokens,
        desc=f"tokenising {description}",
        unit="tok",
        unit_scale=True,
        delay=2,
        file=sys.stderr,
        disable=None,
    ) as bar:
        for batch in documents:
            encoded = encoder.encode_ordinary_batch(batch, num_threads=token_threads())
            chunk = np.fromiter(
                chain.from_iterable(chain(ids, (end_of_text,)) for ids in encoded),
                dtype=TOKEN_DTYPE,
                count=sum(len(ids) + 1 for ids in encoded),
            )
            if max_tokens is not None:
                chunk = chunk[: max_tokens - produced]
            produced += len(chunk)
            bar.update(len(chunk))
            yield chunk
            if max_tokens is not None and produced >= max_tokens:
                return


def write_entry(
    stream: Path, index: Path, key: dict, documents: Iterable[list[str]], tokenizer_name: str, max_tokens: int | None
) -> None:
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
    print(
        f"tokenised {describe(key['documents'])}: {count:,} tokens in {seconds:.1f} s "
        f"({count / max(seconds, 1e-9):,.0f} tokens/s) into {stream}",
        file=sys.stderr,
    )


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
    """Count a corpus split's documents and tokens and time the tokenising (nothing is written: `xlstm-suite prepare
    <artifact> --scale S` writes a sweep's token caches)."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("corpus", help="a hub id, local files, or offline:<name>")
    parser.add_argument("--split", default="train")
    parser.add_argument("--text-field", default="text")
    parser.add_argument(
        "--corpus-config", default=None, help="the hub dataset's configuration, e.g. wikitext-103-raw-v1"
    )
    parser.add_argument("--documents", default="records", choices=DOCUMENT_LAYOUTS)
    parser.add_argument("--tokenizer", default="gpt2", choices=sorted(TOKENIZERS))
    parser.add_argument("--max-tokens", type=int, default=None)
    arguments = parser.parse_args(argv)
    documents = 0

    def counted() -> Iterator[list[str]]:
        nonlocal documents
        for batch in document_batches(
            arguments.corpus, arguments.split, arguments.text_field, arguments.corpus_config, arguments.documents
        ):
            documents += len(batch)
            yield batch

    started = time.perf_counter()
    tokens = sum(
        len(chunk)
        for chunk in token_chunks(
            counted(), arguments.tokenizer, arguments.max_tokens, f"{arguments.corpus} {arguments.split}"
        )
    )
    seconds = time.perf_counter() - started
    print(
        f"{arguments.corpus} {arguments.split}: {documents:,} documents read, {tokens:,} tokens in {seconds:.1f} s "
        f"({tokens / seconds:,.0f} tokens/s on {token_threads()} threads)"
    )


if __name__ == "__main__":
    main()
