"""Pathfinder images drawn here (after Linsley et al. 2018, whose 32x32 images the LRA release holds; the recipe and
its numbers below are this generator's own, not the release's): grey images of ``side`` x ``side`` pixels (the
release's 32 by default; smaller ones for short CPU runs) with three paths made of paddles, two marked end points,
label 1 when one path joins the two marks.

A path is ``paddles`` paddles (uniform in [min_paddles, max_paddles]) of PADDLE_LENGTH pixels with a gap of
GAP_LENGTH pixel between consecutive paddles: a walk of unit steps from a uniform start in a uniform direction that
turns by a uniform angle in [-max_turn, max_turn] at the start of each paddle; a step's pixel is its position rounded
(floor(x + 0.5)), and the gap steps are not drawn. Consecutive drawn pixels of a paddle are 8-neighbours, and the
pixels on either side of a gap are at most 2 apart (Chebyshev). Paths are drawn at PATH_INTENSITY, the marks as 3x3
squares at MARK_INTENSITY centred on a path's end pixel. Every pixel of a path (its marks included) keeps a Chebyshev
distance of at least SEPARATION from every pixel of the other paths, and all paths stay one pixel inside the border.

Label 1 (positive): the first path carries both marks, two distractor paths none. Label 0 (negative): the first two
paths carry one mark each, at their first end, and one distractor path none. Each image is positive with
probability 1/2.

Connectivity, as a solver reads it off the image: dilate the drawn pixels (> 0) by one pixel (a 3x3 square) and take
8-connected components. A path's gaps close (pixels at distance <= 2 grow into touching squares) and different
paths stay apart (pixels at distance >= 4 grow into squares at distance >= 2), so the two marks lie in one component
exactly when one path joins them.

Candidate paths are drawn 32 at a time as arrays (positions are cumulative sums of the steps); the first candidate
that fits beside the paths already drawn is kept. An image whose paths do not fit within a few hundred candidates is
drawn again from scratch. 0.8 ms per image on one CPU core (measured, 5,000 images in 4.0 s): the 200,000 images of
a release-sized set take under 3 minutes, and the sets are kept in the data cache.
"""

from __future__ import annotations

import math

import numpy as np

from tasks.lra.pathfinder_config import RELEASE_SIDE, generation_problems

PADDLE_LENGTH, GAP_LENGTH = 3, 1
SEPARATION = 4  # Chebyshev distance between pixels of different paths
PATH_INTENSITY, MARK_INTENSITY = 160, 255
PATHS = 3
CANDIDATES = 32  # candidate paths drawn at once
CANDIDATE_ROUNDS = 8  # rounds of candidates per path before the image is drawn again


def candidate_paths(rng: np.random.Generator, side: int, paddles: int, max_turn: float) -> np.ndarray:
    """(CANDIDATES, P, 2) int64 pixel (row, column) of each drawn step of CANDIDATES paths, P = paddles * 3."""
    period = PADDLE_LENGTH + GAP_LENGTH
    steps = paddles * period - GAP_LENGTH  # the last paddle has no gap after it
    starts = rng.uniform(1, side - 2, size=(CANDIDATES, 1, 2))  # (K, 1, 2)
    turns = rng.uniform(-max_turn, max_turn, size=(CANDIDATES, paddles))  # (K, paddles)
    turns[:, 0] = rng.uniform(0, 2 * math.pi, size=CANDIDATES)  # the first paddle's direction
    directions = np.repeat(np.cumsum(turns, axis=1), period, axis=1)[:, : steps - 1]  # (K, steps - 1)
    moves = np.stack([np.sin(directions), np.cos(directions)], axis=2)  # (K, steps - 1, 2)
    positions = starts + np.concatenate([np.zeros((CANDIDATES, 1, 2)), np.cumsum(moves, axis=1)], axis=1)
    drawn = np.arange(steps) % period < PADDLE_LENGTH  # (steps,)
    return np.floor(positions[:, drawn] + 0.5).astype(np.int64)  # (K, P, 2)


def square_around(pixel: np.ndarray) -> np.ndarray:
    """(..., 9, 2): the 3x3 square centred on each pixel (..., 2)."""
    offsets = np.stack(np.meshgrid([-1, 0, 1], [-1, 0, 1], indexing="ij"), axis=-1).reshape(9, 2)
    return pixel[..., None, :] + offsets


def place_path(rng: np.random.Generator, forbidden: np.ndarray, paddles: int, max_turn: float) -> np.ndarray | None:
    """(P, 2) pixels of a path that keeps one pixel inside the border of ``forbidden`` (side, side) and off its
    True pixels (the path's end squares too), or None if no candidate fits."""
    side = len(forbidden)
    for _ in range(CANDIDATE_ROUNDS):
        paths = candidate_paths(rng, side, paddles, max_turn)  # (K, P, 2)
        ends = square_around(paths[:, [0, -1]]).reshape(CANDIDATES, 18, 2)  # (K, 18, 2)
        footprint = np.concatenate([paths, ends], axis=1)  # (K, P + 18, 2)
        inside = ((footprint >= 0) & (footprint < side)).all(axis=(1, 2)) & ((paths >= 1) & (paths < side - 1)).all(
            axis=(1, 2)
        )  # (K,)
        clipped = np.clip(footprint, 0, side - 1)
        free = ~forbidden[clipped[..., 0], clipped[..., 1]].any(axis=1)  # (K,)
        fitting = np.flatnonzero(inside & free)
        if fitting.size:
            return paths[fitting[0]]
    return None


def keep_away(forbidden: np.ndarray, pixels: np.ndarray) -> None:
    """Mark every pixel within Chebyshev distance SEPARATION - 1 of ``pixels`` (N, 2) as forbidden."""
    reach = SEPARATION - 1
    for row, column in pixels:
        forbidden[max(row - reach, 0) : row + reach + 1, max(column - reach, 0) : column + reach + 1] = True


def draw_image(
    rng: np.random.Generator, positive: bool, side: int, min_paddles: int, max_paddles: int, max_turn: float
) -> np.ndarray:
    """(side, side) uint8 image of the given label."""
    while True:
        image = np.zeros((side, side), dtype=np.uint8)
        forbidden = np.zeros((side, side), dtype=bool)
        marks = [(0, 0), (0, -1)] if positive else [(0, 0), (1, 0)]  # (path, end) pairs that carry a mark
        placed = []
        for _ in range(PATHS):
            path = place_path(rng, forbidden, int(rng.integers(min_paddles, max_paddles + 1)), max_turn)
            if path is None:
                break
            placed.append(path)
            keep_away(forbidden, np.concatenate([path, square_around(path[[0, -1]]).reshape(18, 2)]))
        if len(placed) < PATHS:
            continue
        for path in placed:
            image[path[:, 0], path[:, 1]] = PATH_INTENSITY
        for path, end in marks:
            square = square_around(placed[path][end])  # (9, 2)
            image[square[:, 0], square[:, 1]] = MARK_INTENSITY
        return image


def generate(
    samples: int,
    rng: np.random.Generator,
    min_paddles: int = 4,
    max_paddles: int = 6,
    max_turn_degrees: float = 30.0,
    side: int = RELEASE_SIDE,
) -> tuple[np.ndarray, np.ndarray]:
    """Images (N, side, side) uint8 and labels (N,) int64 drawn from ``rng``; ValueError naming every bad value
    first."""
    problems = generation_problems(min_paddles, max_paddles, max_turn_degrees, side)
    if samples < 1:
        problems.append(f"samples={samples} must be >= 1")
    if problems:
        raise ValueError("; ".join(problems))
    labels = rng.integers(0, 2, size=samples)  # (N,)
    max_turn = math.radians(max_turn_degrees)
    images = np.stack([draw_image(rng, bool(label), side, min_paddles, max_paddles, max_turn) for label in labels])
    return images, labels.astype(np.int64)
