"""Reader of CIFAR-10's python release (cifar-10-batches-py: data_batch_1 .. data_batch_5, test_batch), the images
of the LRA Image task, as pixel sequences of length 1024 in row-major order.

A batch file is a pickled dict with b"data", (N, 3072) uint8 (each row the 1024 red, then 1024 green, then 1024 blue
values of a 32x32 image, row-major), and b"labels", N classes 0-9. The pickle is read with an unpickler that builds
only numpy arrays, so a foreign file cannot run code.

G-Image (LRA): one grey channel, the luma PIL's ``convert("L")`` computes (ITU-R 601-2, in PIL's fixed point:
(19595 R + 38470 G + 7471 B + 32768) >> 16), which is torchvision's ``Grayscale`` that state-spaces/s4's CIFAR loader
applies. RGB-Image (Orvieto et al. 2023): the three channels at each position.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np

from tasks.lra.release_format import ReleaseFormatError, missing_file

TRAIN_FILES = tuple(f"data_batch_{index}" for index in range(1, 6))
TEST_FILES = ("test_batch",)
SIDE = 32
PIXELS = SIDE * SIDE
BATCH_FORMAT = "a pickled dict with b'data' (N, 3072) uint8 and b'labels' (N integers 0-9)"
NUMPY_CLASSES = {
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
}


class ArraysOnlyUnpickler(pickle.Unpickler):
    """Unpickles plain containers and numpy arrays, nothing that could run code."""

    def find_class(self, module: str, name: str):
        if (module, name) not in NUMPY_CLASSES:
            raise pickle.UnpicklingError(f"{module}.{name} is not a numpy array class")
        return super().find_class(module, name)


def read_cifar_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Pixels (N, 1024, 3) uint8 (row-major positions, RGB) and labels (N,) int64 of one batch file."""
    path = Path(path)
    if not path.is_file():
        raise missing_file(path, "a CIFAR-10 batch, cifar-10-batches-py/<data_batch_k or test_batch>")
    try:
        with open(path, "rb") as handle:
            content = ArraysOnlyUnpickler(handle, encoding="bytes").load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError) as error:
        raise ReleaseFormatError(
            path, "the pickle", f"unreadable ({type(error).__name__}: {error})", BATCH_FORMAT
        ) from None
    if not isinstance(content, dict) or b"data" not in content or b"labels" not in content:
        keys = sorted(content) if isinstance(content, dict) else type(content).__name__
        raise ReleaseFormatError(path, "the pickle", f"keys {keys}", BATCH_FORMAT)
    data, labels = np.asarray(content[b"data"]), np.asarray(content[b"labels"])
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3 * PIXELS:
        raise ReleaseFormatError(path, "entry b'data'", f"{data.dtype} of shape {data.shape}", BATCH_FORMAT)
    if (
        labels.shape != (len(data),)
        or not np.issubdtype(labels.dtype, np.integer)
        or not ((labels >= 0) & (labels < 10)).all()
    ):
        raise ReleaseFormatError(
            path,
            "entry b'labels'",
            f"{labels.dtype} of shape {labels.shape} (values "
            f"{np.unique(labels)[:5].tolist()} ...) for {len(data)} images",
            BATCH_FORMAT,
        )
    pixels = data.reshape(len(data), 3, PIXELS).transpose(0, 2, 1)  # (N, 1024, 3)
    return np.ascontiguousarray(pixels), labels.astype(np.int64)


def read_cifar(folder: Path, files: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The batch files ``files`` of the release folder cifar-10-batches-py, concatenated."""
    read = [read_cifar_batch(Path(folder) / name) for name in files]
    return np.concatenate([pixels for pixels, _ in read]), np.concatenate([labels for _, labels in read])


def grey(pixels: np.ndarray) -> np.ndarray:
    """(N, S, 1) uint8 luma of (N, S, 3) uint8 RGB pixels, as PIL's convert("L") computes it."""
    weighted = pixels.astype(np.uint32) @ np.array([19595, 38470, 7471], dtype=np.uint32)  # (N, S)
    return ((weighted + 32768) >> 16).astype(np.uint8)[:, :, None]
