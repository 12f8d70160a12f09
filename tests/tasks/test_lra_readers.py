"""The LRA release readers on small files in the release formats that the tests write: what each reads (tokens,
bytes, pixel layout, grey scale, labels) and that each malformed file or line raises ReleaseFormatError naming the
file, the line and the expected format."""

import os
import pickle
import re

import numpy as np
import pytest
from PIL import Image

from tasks.lra import ReleaseFormatError
from tasks.lra.cifar_reader import grey, read_cifar, read_cifar_batch
from tasks.lra.listops_reader import read_listops
from tasks.lra.listops_tokens import TOKEN_IDS
from tasks.lra.pathfinder_reader import read_pathfinder
from tasks.lra.retrieval_reader import read_retrieval
from tests.lra_fixtures import (
    cifar_batch,
    listops_source,
    write_cifar,
    write_listops,
    write_pathfinder,
    write_retrieval,
)


def test_listops_sources_lose_their_parentheses_and_keep_operators_digits_and_brackets(tmp_path):
    rows = [("( ( ( [MAX 2 ) 9 ) ] )", "9"), (listops_source("[MIN 4 [SM 7 8 ] 0 ]".split()), "0"), ("3", "3")]
    path = write_listops(tmp_path / "basic_train.tsv", rows)
    samples = read_listops(path, max_length=2000)
    assert rows[1][0] == "( ( ( ( [MIN 4 ) ( ( ( [SM 7 ) 8 ) ] ) ) 0 ) ] )"
    assert samples.labels.tolist() == [9, 0, 3]
    assert samples.sequences.lengths.tolist() == [4, 8, 1]
    inputs, _ = samples.examples(np.array([0]))
    assert inputs.tolist() == [[TOKEN_IDS[word] for word in "[MAX 2 9 ]".split()]]


@pytest.mark.parametrize(
    "lines, where, problem",
    [
        (["Source\tTarget", "( [MAX 2 ) 9 ] )\t9", "( [MAX 2 ) 19 ] )\t9"], "line 3", "unknown token '19'"),
        (["Source\tTarget", "( [MAX 2 ) 9 ] )\t9", "( [MAX 2 ) 9 ] ) 9"], "line 3", "1 tab-separated fields"),
        (["Source\tTarget", "( [MAX 2 ) 9 ] )\t12"], "line 2", "target '12'"),
        (["Source\tTarget", "( [MAX 2 ) 9 ] )\t9", "\t4"], "line 3", "an empty source"),
        (["Input\tOutput", "( [MAX 2 ) 9 ] )\t9"], "line 1", "header 'Input\\tOutput'"),
        (["Source\tTarget"], "line 2", "no samples after the header"),
        (["Source\tTarget", "( [MAX 2 ) 9 1 ] )\t9"], "line 2", "5 tokens; expected at most max_length=4 tokens"),
    ],
)
def test_a_malformed_listops_line_is_named_with_its_file_and_line(tmp_path, lines, where, problem):
    path = tmp_path / "basic_val.tsv"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ReleaseFormatError, match=re.escape(f"{path}, {where}: {problem}")) as raised:
        read_listops(path, max_length=4)
    assert isinstance(raised.value, ValueError) and "expected" in str(raised.value)


def test_a_missing_release_file_names_the_file_and_the_release(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"basic_test.tsv not found: .*lra_release"):
        read_listops(tmp_path / "basic_test.tsv", max_length=2000)


def test_retrieval_reads_label_and_both_documents_as_bytes_cut_to_max_length(tmp_path):
    path = write_retrieval(
        tmp_path / "new_aan_pairs.train.tsv",
        [("1", "paper_a", "paper_b", "héllo", "cited work"), ("0.0", "paper_c", "paper_d", "x" * 10, "y")],
    )
    pairs = read_retrieval(path, max_length=6)
    assert pairs.labels.tolist() == [1, 0]
    inputs, targets = pairs.examples(np.array([0, 1]))  # (2, 2, 6)
    assert inputs.shape == targets.shape == (2, 2, 6)
    assert inputs[0, 0].tolist() == [byte + 1 for byte in "héllo".encode()]  # six bytes: é is two
    assert inputs[0, 1].tolist() == [byte + 1 for byte in b"cited "]
    assert inputs[1, 1].tolist() == [ord("y") + 1, 0, 0, 0, 0, 0]
    assert targets[1, 1].tolist() == [0, -100, -100, -100, -100, -100] and (targets[0] == 1).all()


def test_a_quoted_retrieval_field_loses_its_quotes_and_keeps_its_tab(tmp_path):
    path = tmp_path / "new_aan_pairs.test.tsv"
    path.write_text('1\ta\tb\t"two\tcolumns"\tplain\n0\tc\td\tx\ty\n')
    pairs = read_retrieval(path, max_length=4000)
    inputs, _ = pairs.examples(np.array([0]))
    assert pairs.labels.tolist() == [1, 0] and bytes((inputs[0, 0, :11] - 1).astype(np.uint8)) == b"two\tcolumns"


@pytest.mark.parametrize(
    "row, problem",
    [
        (("1", "a", "b", "text only"), "4 tab-separated fields"),
        (("yes", "a", "b", "one", "two"), "label 'yes'"),
        (("1", "a", "b", "", "two"), "an empty document"),
    ],
)
def test_a_malformed_retrieval_line_is_named_with_its_file_and_line(tmp_path, row, problem):
    path = write_retrieval(tmp_path / "new_aan_pairs.eval.tsv", [("0", "a", "b", "one", "two"), row])
    with pytest.raises(ReleaseFormatError, match=re.escape(f"{path}, line 2: {problem}; expected '<label 0|1>")):
        read_retrieval(path, max_length=4000)


def test_cifar_pixels_are_row_major_positions_with_their_three_channels(tmp_path):
    folder = write_cifar(tmp_path / "cifar-10-batches-py", images_per_batch=4)
    batch = cifar_batch(4, seed=5)  # test_batch
    pixels, labels = read_cifar(folder, ("test_batch",))
    assert pixels.shape == (4, 1024, 3) and labels.tolist() == batch[b"labels"]
    image = batch[b"data"][2].reshape(3, 32, 32)  # channel, row, column
    for row, column in [(0, 0), (0, 31), (17, 5), (31, 31)]:
        assert pixels[2, row * 32 + column].tolist() == image[:, row, column].tolist()
    training, training_labels = read_cifar(folder, tuple(f"data_batch_{index}" for index in range(1, 6)))
    assert training.shape == (20, 1024, 3) and len(training_labels) == 20


def test_grey_is_pils_luma_exactly():
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, size=(3, 1024, 3), dtype=np.uint8)
    pixels[0, :8] = [
        [255, 255, 255],
        [0, 0, 0],
        [255, 0, 0],
        [0, 255, 0],
        [0, 0, 255],
        [1, 2, 3],
        [128, 128, 127],
        [254, 1, 77],
    ]
    expected = np.stack(
        [np.asarray(Image.fromarray(image.reshape(32, 32, 3)).convert("L")).reshape(1024) for image in pixels]
    )
    assert (grey(pixels)[:, :, 0] == expected).all()


@pytest.mark.parametrize(
    "content, where, problem",
    [
        ({b"data": np.zeros((2, 3072), dtype=np.uint8)}, "the pickle", "keys [b'data']"),
        (
            {b"data": np.zeros((2, 1024), dtype=np.uint8), b"labels": [0, 1]},
            "entry b'data'",
            "uint8 of shape (2, 1024)",
        ),
        ({b"data": np.zeros((2, 3072), dtype=np.uint8), b"labels": [0, 10]}, "entry b'labels'", "int64 of shape (2,)"),
    ],
)
def test_a_malformed_cifar_batch_is_named_with_its_file_and_entry(tmp_path, content, where, problem):
    path = tmp_path / "data_batch_3"
    path.write_bytes(pickle.dumps(content))
    with pytest.raises(ReleaseFormatError, match=re.escape(f"{path}, {where}: {problem}")):
        read_cifar_batch(path)


class RunsACommand:
    def __reduce__(self):
        return os.system, ("echo the pickle ran a command",)


def test_a_cifar_batch_that_would_run_code_is_refused_unread(tmp_path, capfd):
    path = tmp_path / "test_batch"
    path.write_bytes(pickle.dumps({b"data": RunsACommand(), b"labels": []}))
    with pytest.raises(ReleaseFormatError, match=r"unreadable \(UnpicklingError: posix.system is not a numpy"):
        read_cifar_batch(path)
    assert "ran a command" not in capfd.readouterr().out


def test_pathfinder_images_and_labels_come_in_metadata_order_and_empty_images_are_left_out(tmp_path, capsys):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(25, 32, 32), dtype=np.uint8)
    labels = rng.integers(0, 2, size=25)
    folder = write_pathfinder(tmp_path / "pathfinder32", images, labels)
    empty = folder / "curv_contour_length_14" / "imgs" / "1" / "sample_12.png"
    empty.write_bytes(b"")
    pixels, read_labels = read_pathfinder(folder, "curv_contour_length_14")
    kept = [index for index in range(25) if index != 12]
    assert (pixels == images[kept].reshape(24, 1024)).all() and read_labels.tolist() == labels[kept].tolist()
    assert f"left out 1 empty Pathfinder image(s): {empty}" in capsys.readouterr().err


def test_a_malformed_pathfinder_metadata_line_or_image_is_named(tmp_path):
    images = np.zeros((4, 32, 32), dtype=np.uint8)
    folder = write_pathfinder(tmp_path / "pathfinder32", images, np.array([0, 1, 0, 1]), difficulty="curv_baseline")
    metadata = folder / "curv_baseline" / "metadata" / "0.npy"
    lines = metadata.read_text().splitlines()
    metadata.write_text("\n".join(lines[:2] + ["imgs/0 sample_2.png 2 maybe"] + lines[3:]) + "\n")
    with pytest.raises(ReleaseFormatError, match=re.escape(f"{metadata}, line 3: 'imgs/0 sample_2.png 2 maybe'")):
        read_pathfinder(folder, "curv_baseline")
    metadata.write_text("\n".join(lines) + "\n")
    image = folder / "curv_baseline" / "imgs" / "0" / "sample_1.png"
    Image.fromarray(np.zeros((16, 32), dtype=np.uint8)).save(image)
    with pytest.raises(ReleaseFormatError, match=re.escape(f"{image}, the image: size 32x16; expected a 32x32")):
        read_pathfinder(folder, "curv_baseline")
    with pytest.raises(ValueError, match=r"difficulty='hard' is not valid; valid choices: \['curv_baseline'"):
        read_pathfinder(folder, "hard")
