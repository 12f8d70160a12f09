"""Where an LRA family's data comes from: ``source: generated`` (the family's own generator, sizes from the config)
or the path of a folder of the LRA release (relative paths are taken from the repository root; the splits and sizes
are then the release's)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

GENERATED = "generated"
REPOSITORY_ROOT = Path(__file__).resolve().parents[2]


def source_problems(source: str, release_folder: str) -> list[str]:
    """Why ``source`` names no data; ``release_folder`` says which folder of the release a path must name."""
    if not source.strip():
        return [f"source={source!r} is empty; valid: {GENERATED!r} or the path of the release folder {release_folder}"]
    return []


def release_folder(source: str) -> Path:
    """The release folder a non-generated ``source`` names."""
    path = Path(source).expanduser()
    return path if path.is_absolute() else REPOSITORY_ROOT / path


@dataclass
class GeneratedSetsFields:
    """The fields of a task config with a generator (every LRA family): how its sequences are pooled, the seed of
    its sets and training order, and the sizes of its generated sets (a release has its own)."""

    pooling: Literal["mean", "last"]
    data_seed: int = field(metadata={"at_least": 0, "at_most": 4_294_967_295})
    train_samples: int = field(metadata={"at_least": 1, "at_most": 10_000_000})
    val_samples: int = field(metadata={"at_least": 1, "at_most": 10_000_000})
    test_samples: int = field(metadata={"at_least": 1, "at_most": 10_000_000})
