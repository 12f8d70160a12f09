"""Lightning data for the LRA families (each datamodule class is its family's registered builder): fixed training,
validation and test sets, generated (seeded as tasks.fixed_sets says, kept in the data cache) or read from a release
folder, served as (inputs, targets) batches whose targets are one class per sequence (tasks.lra.sets).

Release splits: ListOps and Retrieval come as train / val (AAN: eval) / test files; CIFAR-10 has no validation
set, so ``val_fraction`` of its training images, drawn with ``data_seed``, validate; Pathfinder has one folder per
difficulty, split 80/10/10 with ``data_seed`` (state-spaces/s4's fractions).
"""

from __future__ import annotations

import functools

import numpy as np

from tasks.data_cache import cached_arrays
from tasks.fixed_sets import TEST_STREAM, TRAIN_STREAM, VALIDATION_STREAM, FixedSet, FixedSetsDataModule
from tasks.lra import image_generator, listops_generator, pathfinder_generator, retrieval_generator
from tasks.lra.cifar_reader import SIDE, TEST_FILES, TRAIN_FILES, grey, read_cifar
from tasks.lra.listops_reader import read_listops_split
from tasks.lra.pathfinder_reader import read_pathfinder
from tasks.lra.retrieval_reader import read_retrieval_split
from tasks.lra.sets import PixelSequenceSet, RaggedTokens, TokenPairSet, TokenSequenceSet
from tasks.lra.source import GENERATED, release_folder

SPLITS = {TRAIN_STREAM: "train", VALIDATION_STREAM: "val", TEST_STREAM: "test"}
LISTOPS_DRAW_ORDER = (TEST_STREAM, VALIDATION_STREAM, TRAIN_STREAM)  # each excludes the trees of those before it
SPLIT_STREAM = 5  # second entry of the seed of a release's seeded split (after data_seed)
PATHFINDER_FRACTIONS = {VALIDATION_STREAM: 0.1, TEST_STREAM: 0.1}
GENERATOR_VERSION = 1  # part of the cache keys: bump it when the same configuration gives other samples
# Per-channel mean and standard deviation of pixel / 255, state-spaces/s4's normalisation: CIFAR grey (122.6 / 255,
# 61.0 / 255), CIFAR RGB (torchvision's CIFAR-10 statistics), Pathfinder centred to [-1, 1].
NORMALISATION = {1: ((122.6 / 255,), (61.0 / 255,)), 3: ((0.4914, 0.4822, 0.4465), (0.247, 0.243, 0.261))}
PATHFINDER_NORMALISATION = ((0.5,), (0.5,))


def seeded_split(count: int, data_seed: int, fractions: dict[int, float]) -> dict[int, np.ndarray]:
    """Rows of each stream: a permutation of range(count) from default_rng([data_seed, SPLIT_STREAM]), cut into
    the validation and test fractions and the training rest."""
    order = np.random.default_rng([data_seed, SPLIT_STREAM]).permutation(count)
    rows, start = {}, 0
    for stream, fraction in fractions.items():
        rows[stream] = np.sort(order[start : start + int(fraction * count)])
        start += len(rows[stream])
    rows[TRAIN_STREAM] = np.sort(order[start:])
    return rows


def listops_set(config, stream: int) -> TokenSequenceSet:
    """The release's split, or the generated set of ``stream``: the test set first, then the validation set without
    the test set's trees, then the training set without either (the release draws its three splits from one set of
    distinct trees)."""
    if config.source != GENERATED:
        return read_listops_split(release_folder(config.source), SPLITS[stream], config.max_length)
    recipe = {
        "max_depth": config.max_depth,
        "max_args": config.max_args,
        "min_length": config.min_length,
        "max_length": config.max_length,
    }
    drawn_first = LISTOPS_DRAW_ORDER[: LISTOPS_DRAW_ORDER.index(stream)]
    samples = getattr(config, f"{SPLITS[stream]}_samples")

    def draw() -> dict[str, np.ndarray]:
        excluded = frozenset(
            sequence for other in drawn_first for sequence in listops_set(config, other).sequence_bytes()
        )
        drawn = listops_generator.generate(
            samples, np.random.default_rng([config.data_seed, stream]), **recipe, excluded=excluded
        )
        return {"tokens": drawn.sequences.tokens, "offsets": drawn.sequences.offsets, "labels": drawn.labels}

    excluding = [[config.data_seed, other, getattr(config, f"{SPLITS[other]}_samples")] for other in drawn_first]
    arrays = cached_arrays(
        "lra_listops",
        {
            "task": "lra_listops",
            "version": GENERATOR_VERSION,
            **recipe,
            "samples": samples,
            "seed": [config.data_seed, stream],
            "excluding": excluding,
        },
        draw,
    )
    return TokenSequenceSet(RaggedTokens(arrays["tokens"], arrays["offsets"]), arrays["labels"])


def pathfinder_generated_set(config, stream: int, samples: int) -> PixelSequenceSet:
    recipe = {
        "min_paddles": config.min_paddles,
        "max_paddles": config.max_paddles,
        "max_turn_degrees": config.max_turn_degrees,
        "side": config.image_side,
    }

    def draw() -> dict[str, np.ndarray]:
        images, labels = pathfinder_generator.generate(
            samples, np.random.default_rng([config.data_seed, stream]), **recipe
        )
        return {"images": images, "labels": labels}

    arrays = cached_arrays(
        "lra_pathfinder",
        {
            "task": "lra_pathfinder",
            "version": GENERATOR_VERSION,
            **recipe,
            "samples": samples,
            "seed": [config.data_seed, stream],
        },
        draw,
    )
    return PixelSequenceSet(arrays["images"].reshape(samples, -1, 1), arrays["labels"], *PATHFINDER_NORMALISATION)


def retrieval_generated_set(config, stream: int) -> TokenPairSet:
    """The generated pairs of ``stream``: windows of its split's documents (tasks.lra.retrieval_generator)."""
    split, length = SPLITS[stream], config.max_length
    samples = getattr(config, f"{split}_samples")

    def draw() -> dict[str, np.ndarray]:
        documents = retrieval_generator.split_documents(split, length)
        pairs, labels = retrieval_generator.generate(
            documents, samples, np.random.default_rng([config.data_seed, stream]), length
        )
        return {"pairs": pairs, "labels": labels}

    key = {"task": "lra_retrieval", "version": GENERATOR_VERSION, "length": length, "samples": samples}
    key |= {"seed": [config.data_seed, stream], "corpus": retrieval_generator.corpus_content()}
    arrays = cached_arrays("lra_retrieval", key, draw)
    pairs = arrays["pairs"]  # (N, 2, length)
    offsets = np.arange(0, pairs.shape[0] * length + 1, length, dtype=np.int64)  # (N + 1,)
    return TokenPairSet(
        RaggedTokens(np.ascontiguousarray(pairs[:, 0]).reshape(-1), offsets),
        RaggedTokens(np.ascontiguousarray(pairs[:, 1]).reshape(-1), offsets),
        arrays["labels"],
    )


def generated_images(config, stream: int) -> tuple[np.ndarray, np.ndarray]:
    """Pixels (N, 1024, 3) uint8 and labels (N,) of ``stream``'s generated images (tasks.lra.image_generator; the
    same images for G-Image and RGB-Image)."""
    samples = getattr(config, f"{SPLITS[stream]}_samples")

    def draw() -> dict[str, np.ndarray]:
        pixels, labels = image_generator.generate(samples, np.random.default_rng([config.data_seed, stream]))
        return {"pixels": pixels, "labels": labels}

    key = {"task": "lra_image", "version": GENERATOR_VERSION, "samples": samples, "seed": [config.data_seed, stream]}
    arrays = cached_arrays("lra_image", key, draw)
    return arrays["pixels"], arrays["labels"]


def pooled_pixels(pixels: np.ndarray, pool: int) -> np.ndarray:
    """(N, (32 / pool)^2, C) uint8: each image of (N, 1024, C) uint8 row-major pixels averaged over squares of pool x
    pool pixels (rounded), row-major; the pixels themselves for pool 1."""
    if pool == 1:
        return pixels
    count, _, channels = pixels.shape
    side = SIDE // pool
    squares = pixels.reshape(count, side, pool, side, pool, channels).astype(np.float32)  # (N, side, p, side, p, C)
    return np.rint(squares.mean(axis=(2, 4))).astype(np.uint8).reshape(count, side * side, channels)


class ListOpsDataModule(FixedSetsDataModule):
    """Batches: inputs (B, S) int64 tokens padded with 0; targets (B, S) the value 0-9 at the sequence's positions,
    IGNORE_INDEX at its padding."""

    def stream_set(self, stream: int) -> FixedSet:
        return listops_set(self.config, stream)


class RetrievalDataModule(FixedSetsDataModule):
    """Batches: inputs (B, 2, S) int64, the two documents' bytes + 1 padded with 0; targets (B, 2, S) the pair's
    label at each document's positions, IGNORE_INDEX at its padding."""

    def stream_set(self, stream: int) -> FixedSet:
        if self.config.source == GENERATED:
            return retrieval_generated_set(self.config, stream)
        return read_retrieval_split(release_folder(self.config.source), SPLITS[stream], self.config.max_length)


class ImageDataModule(FixedSetsDataModule):
    """Batches: inputs (B, 1024, channels) float32 normalised pixels (CIFAR-10's statistics, generated images too),
    row-major; targets (B, 1024) the class."""

    def stream_set(self, stream: int) -> FixedSet:
        if self.config.source == GENERATED:
            pixels, labels = generated_images(self.config, stream)
        elif stream == TEST_STREAM:
            pixels, labels = read_cifar(release_folder(self.config.source), TEST_FILES)
        else:
            pixels, labels = self._training_images
            rows = seeded_split(len(labels), self.config.data_seed, {VALIDATION_STREAM: self.config.val_fraction})[
                stream
            ]
            pixels, labels = pixels[rows], labels[rows]
        channels = self.config.channels
        pixels = pooled_pixels(pixels, self.config.pool)
        return PixelSequenceSet(grey(pixels) if channels == 1 else pixels, labels, *NORMALISATION[channels])

    @functools.cached_property
    def _training_images(self) -> tuple[np.ndarray, np.ndarray]:
        """The five training batches, read once for the training and the validation set."""
        return read_cifar(release_folder(self.config.source), TRAIN_FILES)


class PathfinderDataModule(FixedSetsDataModule):
    """Batches: inputs (B, side^2, 1) float32 pixels centred to [-1, 1], row-major (side 32 but for smaller
    generated images); targets (B, side^2) the label."""

    def stream_set(self, stream: int) -> FixedSet:
        if self.config.source == GENERATED:
            return pathfinder_generated_set(self.config, stream, getattr(self.config, f"{SPLITS[stream]}_samples"))
        pixels, labels = self._release_images
        rows = seeded_split(len(labels), self.config.data_seed, PATHFINDER_FRACTIONS)[stream]
        return PixelSequenceSet(pixels[rows, :, None], labels[rows], *PATHFINDER_NORMALISATION)

    @functools.cached_property
    def _release_images(self) -> tuple[np.ndarray, np.ndarray]:
        """The difficulty folder's images, read once for the three splits."""
        return read_pathfinder(release_folder(self.config.source), self.config.difficulty)
