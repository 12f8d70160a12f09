"""Small files in the LRA release formats, written by the tests (the release itself is not in the repository), and
a renderer of token sequences as the release writes its ListOps sources (with the generator's parentheses)."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
from PIL import Image

from tasks.lra.listops_tokens import CLOSE, OPERATORS


def listops_source(words: list[str]) -> str:
    """The release's text of a prefix expression: lra_benchmarks' to_string of its nested pairs, e.g.
    ``[MAX 2 9 ]`` -> ``( ( ( [MAX 2 ) 9 ) ] )``."""

    def node(position: int) -> tuple[str, int]:
        if words[position] not in OPERATORS:
            return words[position], position + 1
        text, position = words[position], position + 1
        while words[position] != CLOSE:
            argument, position = node(position)
            text = f"( {text} {argument} )"
        return f"( {text} {CLOSE} )", position + 1

    text, end = node(0)
    assert end == len(words)
    return text


def write_listops(path: Path, rows: list[tuple[str, str]], header: str = "Source\tTarget") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join([header] + [f"{source}\t{target}" for source, target in rows]) + "\n")
    return path


def write_retrieval(path: Path, rows: list[tuple]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join("\t".join(str(field) for field in row) + "\n" for row in rows), encoding="utf-8")
    return path


def cifar_batch(images: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {
        b"batch_label": b"fixture",
        b"data": rng.integers(0, 256, size=(images, 3072), dtype=np.uint8),
        b"labels": rng.integers(0, 10, size=images).tolist(),
    }


def write_cifar(folder: Path, images_per_batch: int = 20) -> Path:
    """cifar-10-batches-py with five training batches and a test batch of ``images_per_batch`` random images."""
    folder.mkdir(parents=True, exist_ok=True)
    for seed, name in enumerate([f"data_batch_{index}" for index in range(1, 6)] + ["test_batch"]):
        with open(folder / name, "wb") as handle:
            pickle.dump(cifar_batch(images_per_batch, seed), handle)
    return folder


def write_pathfinder(
    folder: Path,
    images: np.ndarray,
    labels: np.ndarray,
    difficulty="curv_contour_length_14",
    per_metadata_file: int = 10,
) -> Path:
    """pathfinder32/<difficulty>/imgs/<n>/sample_<k>.png and metadata/<n>.npy (text lines) for (N, 32, 32) images."""
    root = folder / difficulty
    for start in range(0, len(images), per_metadata_file):
        number = start // per_metadata_file
        (root / "imgs" / str(number)).mkdir(parents=True, exist_ok=True)
        (root / "metadata").mkdir(parents=True, exist_ok=True)
        lines = []
        for index in range(start, min(start + per_metadata_file, len(images))):
            Image.fromarray(images[index]).save(root / "imgs" / str(number) / f"sample_{index}.png")
            lines.append(f"imgs/{number} sample_{index}.png {index} {labels[index]}")
        (root / "metadata" / f"{number}.npy").write_text("\n".join(lines) + "\n")
    return folder
