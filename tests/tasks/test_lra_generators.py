"""The LRA generators against solvers written here, apart from them: every ListOps label against a recursive-descent
evaluator of the token sequence, every Pathfinder label against a flood fill of the rendered image; the recipes'
bounds, balanced Pathfinder labels, determinism per seed and distinct samples.

The balance test is a two-sided binomial test at a false-alarm rate of alpha = 1e-4 (the seeds are fixed, so it is
deterministic).
"""

import numpy as np
import pytest
from scipy import ndimage, stats

from tasks.lm.splits import held_out_part
from tasks.lra import image_generator, listops_generator, pathfinder_generator, retrieval_generator
from tasks.lra.cifar_reader import grey as grey_of
from tasks.lra.listops_reader import read_listops
from tasks.lra.listops_tokens import CLOSE, OPERATORS, token_text
from tests.lra_fixtures import listops_source, write_listops

ALPHA = 1e-4
RELEASE = dict(max_depth=10, max_args=10, min_length=501, max_length=1999)
SMALL = dict(max_depth=5, max_args=5, min_length=8, max_length=120)


def evaluate(words: list[str]) -> tuple[int, int, int]:
    """Value, depth and the largest argument count of a prefix ListOps expression, by recursive descent."""

    def node(position: int, depth: int) -> tuple[int, int, int, int]:
        word = words[position]
        if word not in OPERATORS:
            return int(word), position + 1, depth, 0
        arguments, position, deepest, widest = [], position + 1, depth, 0
        while words[position] != CLOSE:
            value, position, child_depth, child_width = node(position, depth + 1)
            arguments.append(value)
            deepest, widest = max(deepest, child_depth), max(widest, child_width)
        ordered = sorted(arguments)
        value = {
            "[MIN": ordered[0],
            "[MAX": ordered[-1],
            "[SM": sum(arguments) % 10,
            "[MED": int(np.median(arguments)),
        }[word]
        return value, position + 1, deepest, max(widest, len(arguments))

    value, end, depth, width = node(0, 1)
    assert end == len(words), "tokens after the expression's end"
    return value, depth, width


@pytest.mark.parametrize("recipe, samples", [(RELEASE, 200), (SMALL, 400)])
def test_every_listops_label_is_the_value_an_independent_evaluator_computes(recipe, samples):
    drawn = listops_generator.generate(samples, np.random.default_rng(1), **recipe)
    inputs, targets = drawn.examples(np.arange(samples))
    lengths = drawn.sequences.lengths
    for row in range(samples):
        words = [token_text(token) for token in inputs[row, : lengths[row]]]
        value, depth, width = evaluate(words)
        assert value == drawn.labels[row] == targets[row, 0]
        assert depth <= recipe["max_depth"] and 2 <= width <= recipe["max_args"]
    assert lengths.min() >= recipe["min_length"] and lengths.max() <= recipe["max_length"]
    assert len({inputs[row, : lengths[row]].tobytes() for row in range(samples)}) == samples  # distinct
    assert len(np.unique(drawn.labels)) == 10


def test_generated_listops_read_back_from_the_release_format_unchanged(tmp_path):
    drawn = listops_generator.generate(50, np.random.default_rng(2), **SMALL)
    inputs, _ = drawn.examples(np.arange(50))
    rows = [
        (listops_source([token_text(token) for token in inputs[row, :length]]), str(label))
        for row, (length, label) in enumerate(zip(drawn.sequences.lengths, drawn.labels))
    ]
    read = read_listops(write_listops(tmp_path / "basic_train.tsv", rows), max_length=SMALL["max_length"])
    assert (read.sequences.tokens == drawn.sequences.tokens).all() and (read.labels == drawn.labels).all()


def test_listops_is_the_same_for_a_seed_and_other_for_another():
    first, again, other = (listops_generator.generate(100, np.random.default_rng(seed), **SMALL) for seed in (3, 3, 4))
    assert (first.sequences.tokens == again.sequences.tokens).all() and (first.labels == again.labels).all()
    assert first.sequences.tokens.tobytes() != other.sequences.tokens.tobytes()


@pytest.mark.parametrize(
    "change, message",
    [
        ({"min_length": 50, "max_length": 40}, "min_length=50 must be <= max_length=40"),
        ({"max_args": 1}, "max_args=1 must be >= 2"),
        ({"samples": 0}, "samples=0 must be >= 1"),
        (
            {"max_depth": 2, "max_args": 2, "min_length": 1, "max_length": 4, "samples": 500},
            "gave 410 distinct samples and then 10000 repeats in a row",
        ),  # 10 digits and 4 x 100 operators of two digits
    ],
)
def test_the_listops_generator_rejects_bad_values_before_drawing(change, message):
    arguments = {**SMALL, "samples": 10, **change}
    with pytest.raises(ValueError, match=message):
        listops_generator.generate(arguments.pop("samples"), np.random.default_rng(0), **arguments)


def connected(image: np.ndarray) -> bool:
    """Whether the two marks (the 3x3 squares at 255) are joined: dilate the drawn pixels by one pixel, then
    8-connected components (a mark blob of both marks counts as joined)."""
    marks, count = ndimage.label(image == pathfinder_generator.MARK_INTENSITY, structure=np.ones((3, 3)))
    if count == 1:
        return True
    assert count == 2, f"{count} marks"
    grown = ndimage.binary_dilation(image > 0, structure=np.ones((3, 3)))
    components, _ = ndimage.label(grown, structure=np.ones((3, 3)))
    first, second = (np.argwhere(marks == index)[0] for index in (1, 2))
    return components[tuple(first)] == components[tuple(second)]


def test_every_pathfinder_label_is_what_a_flood_fill_of_the_image_finds_and_labels_are_balanced():
    images, labels = pathfinder_generator.generate(400, np.random.default_rng(5))
    assert images.shape == (400, 32, 32) and images.dtype == np.uint8
    assert [connected(image) for image in images] == labels.astype(bool).tolist()
    assert stats.binomtest(int(labels.sum()), 400, 0.5).pvalue > ALPHA
    grown = [ndimage.label(ndimage.binary_dilation(image > 0, np.ones((3, 3))), np.ones((3, 3)))[1] for image in images]
    drawn = [ndimage.label(image > 0, np.ones((3, 3)))[1] for image in images]
    assert set(grown) == {pathfinder_generator.PATHS}  # three paths, kept apart
    assert np.mean(np.array(drawn) > pathfinder_generator.PATHS) > 0.9  # dashed: the gaps split the drawn pixels


def test_smaller_pathfinder_images_keep_their_labels_and_the_release_side_is_the_default():
    images, labels = pathfinder_generator.generate(100, np.random.default_rng(8), min_paddles=2, max_paddles=3, side=20)
    assert images.shape == (100, 20, 20)
    assert [connected(image) for image in images] == labels.astype(bool).tolist()
    assert pathfinder_generator.generate(1, np.random.default_rng(8))[0].shape == (1, 32, 32)


def test_pathfinder_is_the_same_for_a_seed_and_other_for_another():
    first, again, other = (pathfinder_generator.generate(20, np.random.default_rng(seed)) for seed in (6, 6, 7))
    assert (first[0] == again[0]).all() and (first[1] == again[1]).all() and (first[0] != other[0]).any()


@pytest.mark.parametrize(
    "change, message",
    [
        ({"min_paddles": 5, "max_paddles": 4}, "min_paddles=5 must be <= max_paddles=4"),
        ({"max_paddles": 9}, "max_paddles=9 must be <= 8"),
        ({"max_turn_degrees": 120.0}, r"max_turn_degrees=120.0 must be in \[0, 90\]"),
        ({"side": 12}, "image_side=12 must be >= 16"),
        ({"side": 20, "max_paddles": 5}, "max_paddles=5 must be <= 4 at image_side=20"),
    ],
)
def test_the_pathfinder_generator_rejects_bad_values_before_drawing(change, message):
    with pytest.raises(ValueError, match=message):
        pathfinder_generator.generate(10, np.random.default_rng(0), **change)


def retrieval_documents(sources: int = 2, per_source: int = 5, length: int = 40) -> list[list[bytes]]:
    """Per source, documents of 2-4 x ``length`` bytes, each byte naming its document (so a window says where it is
    from)."""
    rng = np.random.default_rng(7)
    return [
        [
            bytes([10 * source + index + 1]) * int(rng.integers(2 * length, 4 * length + 1))
            for index in range(per_source)
        ]
        for source in range(sources)
    ]


def test_a_retrieval_pair_is_positive_exactly_when_both_windows_come_from_one_document():
    length = 40
    pairs, labels = retrieval_generator.generate(
        retrieval_documents(length=length), 400, np.random.default_rng(0), length
    )
    assert pairs.shape == (400, 2, length) and pairs.dtype == np.uint16
    document = pairs[:, :, 0].astype(int) - 1  # (N, 2): the byte that names each window's document (token = byte + 1)
    assert ((pairs - 1) == document[:, :, None]).all()  # every window lies inside one document
    assert ((document[:, 0] == document[:, 1]) == (labels == 1)).all()
    assert ((document[:, 0] // 10) == (document[:, 1] // 10)).all()  # a negative pairs two documents of one source
    assert 0.4 < labels.mean() < 0.6


def test_the_two_windows_of_a_positive_pair_do_not_overlap():
    length, text = 8, bytes(range(1, 65))  # one document whose bytes name their positions
    pairs, labels = retrieval_generator.generate([[text, text[::-1]]], 300, np.random.default_rng(1), length)
    for (first, second), label in zip(pairs.astype(int) - 1, labels, strict=True):
        if label and (np.diff(first) == 1).all() and (np.diff(second) == 1).all():  # both windows of `text`
            assert first[0] >= second[-1] + 1 or second[0] >= first[-1] + 1


def test_retrieval_pairs_are_the_same_for_a_seed_and_need_a_source_of_two_documents():
    documents = retrieval_documents()
    first = retrieval_generator.generate(documents, 50, np.random.default_rng(3), 40)
    again = retrieval_generator.generate(documents, 50, np.random.default_rng(3), 40)
    assert all((a == b).all() for a, b in zip(first, again, strict=True))
    with pytest.raises(ValueError, match="no source has two documents of at least 80 bytes"):
        retrieval_generator.generate([[b"x" * 100], []], 5, np.random.default_rng(0), 40)


def test_retrieval_documents_are_split_by_their_held_out_part_and_long_enough(monkeypatch):
    texts = [f"document {index} " * 30 for index in range(400)]
    monkeypatch.setattr(retrieval_generator, "document_batches", lambda corpus, split, field: iter([texts]))
    splits = {split: retrieval_generator.split_documents(split, 100) for split in ("train", "val", "test")}
    held_out = {"train": "train", "val": "validation", "test": "test"}
    for split, sources in splits.items():
        assert len(sources) == len(retrieval_generator.SOURCES)
        for documents in sources:
            assert all(len(document) >= 200 for document in documents)
            assert all(
                held_out_part(document.decode(), retrieval_generator.HOLDOUT_FRACTION) == held_out[split]
                for document in documents
            )
    assert len(splits["train"][0]) > len(splits["val"][0]) > 0 and len(splits["test"][0]) > 0


def test_generated_images_are_cifar_shaped_with_every_class_and_the_same_for_a_seed():
    pixels, labels = image_generator.generate(300, np.random.default_rng(0))
    assert pixels.shape == (300, 1024, 3) and pixels.dtype == np.uint8 and labels.dtype == np.int64
    assert set(labels.tolist()) == set(range(len(image_generator.SHAPES)))
    again, _ = image_generator.generate(300, np.random.default_rng(0))
    other, _ = image_generator.generate(300, np.random.default_rng(1))
    assert (again == pixels).all() and not (other == pixels).all()
    with pytest.raises(ValueError, match="samples=0 must be >= 1"):
        image_generator.generate(0, np.random.default_rng(0))


def test_the_class_is_in_the_shape_and_not_in_the_colours():
    """Each class's shape covers its own share of the image (a property of the shape), while the mean colour of its
    images is the same for every class."""
    pixels, labels = image_generator.generate(2000, np.random.default_rng(2))
    grey = pixels.astype(float) @ image_generator.LUMA  # (N, 1024)
    # the shape's pixels: on the side of the midpoint between the image's two luma levels away from its border's
    border = grey.reshape(-1, 32, 32)[:, [0, -1], :].reshape(len(grey), -1)  # (N, 64): mostly background
    middle = (grey.max(axis=1) + grey.min(axis=1)) / 2  # (N,)
    background_above = np.median(border, axis=1) > middle
    shape = np.where(background_above[:, None], grey < middle[:, None], grey > middle[:, None])  # (N, 1024)
    share = {label: shape[labels == label].mean() for label in range(10)}
    assert share[7] > 0.3 and share[8] > 0.3  # stripes and checkerboard fill the image
    assert share[1] < share[0] and share[3] < share[2]  # a ring and an outline less than their filled shapes
    assert max(share[label] for label in (0, 1, 2, 3, 4, 5, 6, 9)) < 0.3
    colour = pixels.mean(axis=1)  # (N, 3): each image's mean colour, drawn alike for every class
    for channel in range(3):  # one-way ANOVA across the classes: no class differs in its colours
        assert stats.f_oneway(*(colour[labels == label, channel] for label in range(10))).pvalue > 1e-3


def test_the_grey_image_keeps_the_shape():
    pixels, _ = image_generator.generate(200, np.random.default_rng(3))
    grey = grey_of(pixels)[:, :, 0].astype(float)  # (N, 1024) the LRA's luma
    levels = np.sort(grey, axis=1)
    contrast = levels[:, -20:].mean(axis=1) - levels[:, :20].mean(axis=1)
    assert (contrast >= image_generator.MIN_LUMA_CONTRAST - 2 * image_generator.NOISE).all()
