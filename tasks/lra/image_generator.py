"""Images drawn here in CIFAR-10's format (32x32 RGB, ten classes), the stand-in for the LRA Image tasks (G-Image and
RGB-Image) where CIFAR-10 cannot be reached: each image one shape of its class, at a uniform position, size and
rotation, in a uniform foreground colour on a uniform background colour, with Gaussian pixel noise. The class is in
the shape alone: its colours, position, size and rotation are drawn the same way for every class, and every class is
the same under any rotation (so no two classes differ by a rotation).

The classes (SHAPES, in label order), in the shape's own coordinates (u, v) = the pixel's offset from its centre,
rotated and divided by its radius:
disk (u^2 + v^2 <= 1), ring (a disk without its centre), square, square outline, triangle, plus (two bars),
ellipse (v stretched to a third of u), stripes (bands across the whole image), checkerboard (over the whole image),
two disks (two small disks side by side).

The foreground and background colours differ in luma by at least MIN_LUMA_CONTRAST, so that the grey images (the
LRA's G-Image, tasks.lra.cifar_reader.grey) keep the shape.
"""

from __future__ import annotations

import numpy as np

from tasks.lra.cifar_reader import SIDE

SHAPES = (
    "disk",
    "ring",
    "square",
    "square outline",
    "triangle",
    "plus",
    "ellipse",
    "stripes",
    "checkerboard",
    "two disks",
)
RADIUS = (6.0, 12.0)  # pixels, uniform
NOISE = 12.0  # standard deviation of the pixel noise, in 0-255 units
MIN_LUMA_CONTRAST = 60.0
LUMA = np.array([0.299, 0.587, 0.114])


def shape_mask(label: int, u: np.ndarray, v: np.ndarray, period: float) -> np.ndarray:
    """(side, side) bool: the pixels of class ``label``'s shape at shape coordinates (u, v); ``period`` (in radii)
    of the stripes and the checkerboard."""
    radial, box = u**2 + v**2, np.maximum(abs(u), abs(v))
    if label == 0:
        return radial <= 1
    if label == 1:
        return (radial <= 1) & (radial >= 0.4)
    if label == 2:
        return box <= 0.8
    if label == 3:
        return (box <= 0.8) & (box >= 0.5)
    if label == 4:
        return (v >= -0.5) & (v <= 1 - 1.7 * abs(u))
    if label == 5:
        return ((abs(u) <= 0.3) & (abs(v) <= 1)) | ((abs(v) <= 0.3) & (abs(u) <= 1))
    if label == 6:
        return u**2 + (3 * v) ** 2 <= 1
    if label == 7:
        return np.sin(2 * np.pi * u / period) > 0
    if label == 8:
        return np.sin(2 * np.pi * u / period) * np.sin(2 * np.pi * v / period) > 0
    return ((u - 0.55) ** 2 + v**2 <= 0.16) | ((u + 0.55) ** 2 + v**2 <= 0.16)


def colours(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(3,) foreground and (3,) background colours whose lumas differ by at least MIN_LUMA_CONTRAST."""
    while True:
        foreground, background = rng.uniform(0, 255, size=(2, 3))
        if abs(LUMA @ (foreground - background)) >= MIN_LUMA_CONTRAST:
            return foreground, background


def draw_image(rng: np.random.Generator, label: int) -> np.ndarray:
    """(1024, 3) uint8: one image of class ``label``, row-major pixels (as tasks.lra.cifar_reader reads them)."""
    radius = rng.uniform(*RADIUS)
    centre = rng.uniform(radius * 0.7, SIDE - 1 - radius * 0.7, size=2)  # (2,) row, column
    angle = rng.uniform(0, 2 * np.pi)
    rows, columns = np.mgrid[0:SIDE, 0:SIDE].astype(float)  # (side, side) each
    dy, dx = rows - centre[0], columns - centre[1]
    u = (np.cos(angle) * dx + np.sin(angle) * dy) / radius
    v = (-np.sin(angle) * dx + np.cos(angle) * dy) / radius
    mask = shape_mask(label, u, v, period=rng.uniform(0.5, 0.8))  # (side, side)
    foreground, background = colours(rng)
    image = np.where(mask[..., None], foreground, background) + rng.normal(0, NOISE, size=(SIDE, SIDE, 3))
    return np.clip(np.rint(image), 0, 255).astype(np.uint8).reshape(SIDE * SIDE, 3)


def generate(samples: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Pixels (N, 1024, 3) uint8 and labels (N,) int64 (uniform over the ten classes) drawn from ``rng``."""
    if samples < 1:
        raise ValueError(f"samples={samples} must be >= 1")
    labels = rng.integers(0, len(SHAPES), size=samples)  # (N,)
    return np.stack([draw_image(rng, int(label)) for label in labels]), labels.astype(np.int64)
