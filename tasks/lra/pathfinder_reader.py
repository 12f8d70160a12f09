"""Reader of the LRA Pathfinder-32 release (pathfinder32/<difficulty>/), images as pixel sequences of length 1024.

A difficulty folder (curv_baseline, curv_contour_length_9, curv_contour_length_14) holds imgs/<n>/sample_<k>.png,
32x32 grey images, and metadata/<n>.npy, which despite its name is text: one line per image, whitespace-separated
fields of which the first is the image's folder (imgs/<n>), the second its file name and the fourth its label (1: the
two dots are connected), as state-spaces/s4's PathFinderDataset reads them. The release holds one empty image
(curv_baseline/imgs/0/sample_172.png, which s4 leaves out): empty images are left out and named on stderr; any other
unreadable image, a malformed metadata line or a missing image raises ReleaseFormatError.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from PIL import Image, UnidentifiedImageError

from tasks.lra.release_format import ReleaseFormatError, missing_file

DIFFICULTIES = ("curv_baseline", "curv_contour_length_9", "curv_contour_length_14")
SIDE = 32
METADATA_FORMAT = "'imgs/<n> sample_<k>.png <index> <label 0|1> ...' (at least four whitespace-separated fields)"
IMAGE_FORMAT = f"a {SIDE}x{SIDE} grey-scale PNG"


def metadata_entries(path: Path) -> list[tuple[Path, int, int]]:
    """(image path relative to the difficulty folder, label, line number) of each line of one metadata file."""
    entries = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) < 4 or fields[3] not in ("0", "1") or not fields[1].endswith(".png"):
                raise ReleaseFormatError(path, f"line {number}", f"{line.strip()!r}", METADATA_FORMAT)
            entries.append((Path(fields[0]) / fields[1], int(fields[3]), number))
    return entries


def read_image(path: Path, metadata: Path, number: int) -> np.ndarray | None:
    """(1024,) uint8 pixels of one image, row-major; None for an empty file."""
    if not path.is_file():
        raise ReleaseFormatError(metadata, f"line {number}", f"its image {path} does not exist", "an existing image")
    if path.stat().st_size == 0:
        return None
    try:
        with Image.open(path) as image:
            pixels = np.asarray(image.convert("L"))
    except (UnidentifiedImageError, OSError) as error:
        raise ReleaseFormatError(path, "the image", f"unreadable ({error})", IMAGE_FORMAT) from None
    if pixels.shape != (SIDE, SIDE):
        raise ReleaseFormatError(path, "the image", f"size {pixels.shape[1]}x{pixels.shape[0]}", IMAGE_FORMAT)
    return pixels.reshape(-1)


def read_pathfinder(folder: Path, difficulty: str) -> tuple[np.ndarray, np.ndarray]:
    """Pixels (N, 1024) uint8 and labels (N,) int64 of every image of ``folder``/``difficulty``, in the order of
    the metadata files (by number) and their lines."""
    if difficulty not in DIFFICULTIES:
        raise ValueError(f"difficulty={difficulty!r} is not valid; valid choices: {list(DIFFICULTIES)}")
    root = Path(folder) / difficulty
    metadata_files = sorted((root / "metadata").glob("*.npy"), key=lambda path: int(path.stem))
    if not metadata_files:
        raise missing_file(root / "metadata" / "<n>.npy", "the Pathfinder metadata, pathfinder32/<difficulty>/metadata")
    images, labels, empty = [], [], []
    for metadata in metadata_files:
        for relative, label, number in metadata_entries(metadata):
            pixels = read_image(root / relative, metadata, number)
            if pixels is None:
                empty.append(str(root / relative))
                continue
            images.append(pixels)
            labels.append(label)
    if empty:
        print(f"warning: left out {len(empty)} empty Pathfinder image(s): {', '.join(empty[:5])}", file=sys.stderr)
    if not images:
        raise ReleaseFormatError(metadata_files[0], "line 1", "no images listed", METADATA_FORMAT)
    return np.stack(images), np.array(labels, dtype=np.int64)
