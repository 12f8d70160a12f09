"""A model config's forward and training FLOPs per token (models.flops), kept on disk beside the plan cache: a dry run
whose plan is cached then estimates its compute without importing torch, which models.flops needs to build each
backbone on the meta device (seconds per process, most of a warm dry run's time).

One file holds every entry, keyed by the arguments of ``models.flops.flops_per_token`` and the digest of the code
that plans (experiments.config.plan_cache.code_digest, models/ included): a change to a model's code starts fresh
entries. XLSTM_SUITE_COMPOSE_CACHE=off switches it off with the other caches; a file that does not read back as
entries is ignored with a warning and replaced.
"""

import functools
import json
import sys
from pathlib import Path

from experiments.atomic import write_text_atomic
from experiments.config import compose_cache
from experiments.config.plan_cache import code_digest

FILE_NAME = "flops_per_token.json"


def flops_per_token(
    name: str,
    embedding_dim: int,
    num_blocks: int,
    options: dict,
    *,
    sequence_length: int,
    output_size: int,
    input_features: int | None,
) -> tuple[float, float]:
    """(forward, training) FLOPs per token, as ``models.flops.flops_per_token`` gives them (its ValueError naming a
    bad value)."""
    key = json.dumps(
        [code_digest(), name, embedding_dim, num_blocks, options, sequence_length, output_size, input_features],
        sort_keys=True,
    )
    folder = compose_cache.cache_folder()
    entries = known_entries(folder)
    if key not in entries:
        from models.flops import flops_per_token as computed  # torch: only for a model config not estimated before

        per_token = computed(
            name,
            embedding_dim,
            num_blocks,
            options,
            sequence_length=sequence_length,
            output_size=output_size,
            input_features=input_features,
        )
        entries[key] = [per_token.forward, per_token.training]
        if folder is not None:
            try:
                write_text_atomic(folder / FILE_NAME, json.dumps(entries))
            except OSError:
                pass  # a read-only home: the cache only saves time
    forward, training = entries[key]
    return forward, training


@functools.cache
def known_entries(folder: Path | None) -> dict[str, list[float]]:
    """The entries of the folder's file, read once per process ({} without one, or for a damaged one)."""
    path = None if folder is None else folder / FILE_NAME
    if path is None or not path.exists():
        return {}
    try:
        entries = json.loads(path.read_text())
        sound = isinstance(entries, dict) and all(
            isinstance(value, list) and len(value) == 2 and all(isinstance(number, (int, float)) for number in value)
            for value in entries.values()
        )
    except (OSError, ValueError):
        sound = False
    if not sound:
        print(f"warning: FLOPs cache {path} is damaged; ignored, estimating again", file=sys.stderr)
        return {}
    return entries
