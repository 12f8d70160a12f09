"""The LRA task families (lra_listops, lra_retrieval, lra_image, lra_pathfinder): their configs compose and their
bad values are named by the torch-free validation, their datamodules serve generated or release data as (inputs,
targets) batches with one class per sequence, the generated splits are seeded apart and disjoint, the release
splits are the release's or seeded, and a tiny run trains on each family."""

import re

import numpy as np
import pytest

from experiments.config.configuration import ConfigError, compose_run_config, task_config
from experiments.config.validation import task_problems, validate_run_config
from experiments.training.train import run_training
from tasks.fixed_sets import TEST_STREAM, TRAIN_STREAM, VALIDATION_STREAM
from tasks.lra import ListOpsTaskConfig, PathfinderTaskConfig, RetrievalTaskConfig, retrieval_generator
from tasks.lra.data import ImageDataModule, ListOpsDataModule, PathfinderDataModule, RetrievalDataModule
from tasks.registry import task_family
from tests.lra_fixtures import write_cifar, write_listops, write_pathfinder, write_retrieval

STREAMS = (TRAIN_STREAM, VALIDATION_STREAM, TEST_STREAM)
SMALL_LISTOPS = ["task.max_depth=4", "task.max_args=4", "task.min_length=6", "task.max_length=60"]
SIZES = ["task.train_samples=48", "task.val_samples=16", "task.test_samples=16"]


def listops_config(**changes) -> ListOpsTaskConfig:
    fields = dict(
        name="lra_listops",
        family="lra_listops",
        source="generated",
        max_depth=4,
        max_args=4,
        min_length=6,
        max_length=60,
        pooling="mean",
        data_seed=0,
        train_samples=48,
        val_samples=16,
        test_samples=16,
    )
    return ListOpsTaskConfig(**{**fields, **changes})


def pathfinder_config(**changes) -> PathfinderTaskConfig:
    fields = dict(
        name="lra_pathfinder",
        family="lra_pathfinder",
        source="generated",
        difficulty="curv_contour_length_14",
        min_paddles=4,
        max_paddles=6,
        max_turn_degrees=30.0,
        pooling="last",
        data_seed=0,
        train_samples=40,
        val_samples=20,
        test_samples=20,
    )
    return PathfinderTaskConfig(**{**fields, **changes})


@pytest.mark.parametrize(
    "name, kind, size, classes",
    [
        ("lra_listops", "tokens", 16, 10),
        ("lra_retrieval", "tokens", 257, 2),
        ("lra_image_grey", "vectors", 1, 10),
        ("lra_image_rgb", "vectors", 3, 10),
        ("lra_pathfinder", "vectors", 1, 2),
    ],
)
def test_each_task_config_composes_validates_and_gives_the_spec_of_its_datamodule(name, kind, size, classes):
    task = task_config(name)
    assert task_problems(task) == []
    spec = task_family(task["family"]).spec(task)
    assert (spec.input_kind, spec.input_size, spec.num_classes, spec.pooling) == (kind, size, classes, "mean")
    assert spec.random_accuracy == 1 / classes  # the paper's random baselines: 0.5 and 0.1
    assert task_family(task["family"]).build_datamodule(task, batch_size=4).spec == spec


def test_listops_defaults_are_the_release_recipe():
    task = task_config("lra_listops")
    assert (task["max_depth"], task["max_args"], task["min_length"], task["max_length"]) == (10, 10, 501, 1999)
    assert (task["train_samples"], task["val_samples"], task["test_samples"]) == (96000, 2000, 2000)


@pytest.mark.parametrize(
    "task, change, message",
    [
        ("lra_listops", "task.min_length=2500", "task.min_length=2500 must be <= max_length=1999"),
        ("lra_listops", "task.pooling=max", "task.pooling='max' is not valid; valid choices: ['mean', 'last']"),
        (
            "lra_listops",
            "task.source=''",
            "task.source='' is empty; valid: 'generated' or the path of the release folder",
        ),
        ("lra_image_grey", "task.channels=2", "task.channels=2 is not valid; valid choices: [1, 3]"),
        ("lra_image_rgb", "task.pool=3", "task.pool=3 is not valid; valid choices: [1, 2, 4]"),
        (
            "lra_image_grey",
            "task.channels=3",
            "task.name='lra_image_grey' does not match channels=3; valid: name='lra_image_rgb'",
        ),
        ("lra_image_rgb", "task.val_fraction=0", "task.val_fraction=0 must be > 0"),
        ("lra_pathfinder", "task.max_paddles=9", "task.max_paddles=9 must be <= 8"),
        ("lra_pathfinder", "+task.image_side=20", "task.max_paddles=6 must be <= 4 at image_side=20"),
        (
            "lra_pathfinder",
            "task.difficulty=hard",
            "task.difficulty='hard' is not valid; valid choices: ['curv_baseline'",
        ),
    ],
)
def test_bad_values_are_named_by_the_torch_free_validation(task, change, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        validate_run_config(compose_run_config(["model=lstm", f"task={task}", change]))


def test_generated_listops_batches_hold_the_label_at_each_position_and_padding_after():
    module = ListOpsDataModule(listops_config(), batch_size=8)
    inputs, targets = next(iter(module.train_dataloader()))
    lengths = (inputs != 0).sum(1)  # (B,)
    assert inputs.shape == targets.shape and inputs.shape[1] == int(lengths.max())
    for row in range(8):
        assert (inputs[row, : lengths[row]] != 0).all() and (inputs[row, lengths[row] :] == 0).all()
        assert (targets[row, : lengths[row]] == targets[row, 0]).all() and (targets[row, lengths[row] :] == -100).all()
    assert 0 <= targets[:, 0].min() and targets[:, 0].max() <= 9


@pytest.mark.parametrize(
    "datamodule, config", [(ListOpsDataModule, listops_config()), (PathfinderDataModule, pathfinder_config())]
)
def test_generated_splits_are_seeded_apart_disjoint_and_the_same_for_the_same_seed(datamodule, config):
    first, again = datamodule(config, batch_size=4), datamodule(config, batch_size=4)
    samples = {}
    for stream in STREAMS:
        inputs, _ = first.stream_set(stream).examples(np.arange(len(first.stream_set(stream))))
        repeated, _ = again.stream_set(stream).examples(np.arange(len(again.stream_set(stream))))
        assert (inputs == repeated).all()
        samples[stream] = {row.tobytes() for row in inputs}
    assert [len(samples[stream]) for stream in STREAMS] == [len(first.stream_set(stream)) for stream in STREAMS]
    assert not samples[TRAIN_STREAM] & samples[VALIDATION_STREAM] and not samples[TRAIN_STREAM] & samples[TEST_STREAM]
    assert not samples[VALIDATION_STREAM] & samples[TEST_STREAM]
    other = datamodule(type(config)(**{**config.__dict__, "data_seed": 1}), batch_size=4)
    assert (other.stream_set(TRAIN_STREAM).labels != first.stream_set(TRAIN_STREAM).labels).any()


def test_generated_listops_splits_stay_disjoint_where_the_recipe_repeats_trees_often():
    config = listops_config(
        max_depth=2, max_args=3, min_length=1, max_length=5, train_samples=300, val_samples=100, test_samples=100
    )  # 4,410 trees, the ten single digits drawn 3 times in 4
    module = ListOpsDataModule(config, batch_size=4)
    samples = {stream: set(module.stream_set(stream).sequence_bytes()) for stream in STREAMS}
    assert [len(samples[stream]) for stream in STREAMS] == [300, 100, 100]
    assert all(len(samples[TEST_STREAM] & samples[stream]) == 0 for stream in (TRAIN_STREAM, VALIDATION_STREAM))
    assert not samples[TRAIN_STREAM] & samples[VALIDATION_STREAM]
    assert bytes([1]) in samples[TEST_STREAM]  # the digit 0 alone: the split drawn first takes the likely trees


def test_smaller_generated_pathfinder_images_are_shorter_sequences():
    module = PathfinderDataModule(pathfinder_config(image_side=20, min_paddles=2, max_paddles=3), batch_size=4)
    inputs, _ = module.stream_set(VALIDATION_STREAM).examples(np.arange(2))
    assert inputs.shape == (2, 400, 1) and module.spec.fixed_length == 400
    release = pathfinder_config(source="data/lra_release/pathfinder32", image_side=24)
    assert "image_side=24 applies to generated images only" in release.problems()[0]


def test_pathfinder_inputs_are_centred_pixels_in_row_major_order():
    module = PathfinderDataModule(pathfinder_config(), batch_size=4)
    images = module.stream_set(VALIDATION_STREAM)
    inputs, targets = images.examples(np.arange(3))
    assert inputs.shape == (3, 1024, 1) and inputs.dtype == np.float32
    assert np.allclose(inputs[:, :, 0], images.pixels[:3, :, 0] / 127.5 - 1)
    assert (targets == images.labels[:3, None]).all()


def test_the_release_splits_are_the_release_files_or_seeded_and_disjoint(tmp_path):
    folder = tmp_path / "listops-1000"
    for split, source in [("train", "( [MAX 2 ) 9 ] )"), ("val", "( [MIN 4 ) 7 ] )"), ("test", "( [SM 5 ) 8 ] )")]:
        write_listops(folder / f"basic_{split}.tsv", [(source, "3")] * 4)
    listops = ListOpsDataModule(listops_config(source=str(folder)), batch_size=2)
    assert [len(listops.stream_set(stream)) for stream in STREAMS] == [4, 4, 4]
    assert listops.stream_set(TEST_STREAM).sequences.tokens[:4].tolist() == [14, 6, 9, 15]  # [SM 5 8 ]

    cifar = write_cifar(tmp_path / "cifar-10-batches-py", images_per_batch=20)  # 100 training images
    image = ImageDataModule(
        task_family("lra_image").config(**{**task_config("lra_image_rgb"), "source": str(cifar)}), batch_size=4
    )
    sets = {stream: image.stream_set(stream) for stream in STREAMS}
    assert [len(sets[stream]) for stream in STREAMS] == [90, 10, 20]
    training = {row.tobytes() for row in sets[TRAIN_STREAM].pixels}
    assert not training & {row.tobytes() for row in sets[VALIDATION_STREAM].pixels} and len(training) == 90
    inputs, _ = sets[TEST_STREAM].examples(np.arange(2))
    assert inputs.shape == (2, 1024, 3) and abs(float(inputs.mean())) < 0.5  # normalised per channel

    images, labels = (np.random.default_rng(0).integers(0, 256, size=(30, 32, 32), dtype=np.uint8), np.arange(30) % 2)
    pathfinder = PathfinderDataModule(
        pathfinder_config(source=str(write_pathfinder(tmp_path / "pathfinder32", images, labels))), batch_size=4
    )
    rows = {stream: {row.tobytes() for row in pathfinder.stream_set(stream).pixels} for stream in STREAMS}
    assert [len(rows[stream]) for stream in STREAMS] == [24, 3, 3]
    assert set().union(*rows.values()) == {image.reshape(1024, 1).tobytes() for image in images}


def test_generated_retrieval_batches_hold_both_windows_and_their_label_and_each_split_reads_its_documents(
    monkeypatch, tmp_path
):
    monkeypatch.setenv("XLSTM_SUITE_DATA_CACHE", str(tmp_path))
    asked = []

    def documents(split, length):
        asked.append((split, length))
        return [[bytes([index + 1]) * (3 * length) for index in range(4)]]

    monkeypatch.setattr(retrieval_generator, "split_documents", documents)
    monkeypatch.setattr(retrieval_generator, "corpus_content", lambda: {"docs": "these four"})  # no corpus installed
    fields = dict(name="lra_retrieval", family="lra_retrieval", source="generated", max_length=12, pooling="mean")
    config = RetrievalTaskConfig(**fields, data_seed=0, train_samples=32, val_samples=8, test_samples=8)
    module = RetrievalDataModule(config, batch_size=4)
    inputs, targets = next(iter(module.train_dataloader()))
    assert tuple(inputs.shape) == (4, 2, 12) and (inputs > 0).all()  # no padding: every window is 12 bytes
    labels = targets[:, 0, 0]
    assert ((inputs[:, 0, 0] == inputs[:, 1, 0]) == (labels == 1)).all() and (targets == labels[:, None, None]).all()
    next(iter(module.val_dataloader())), next(iter(module.test_dataloader()))
    assert sorted(asked) == [("test", 12), ("train", 12), ("val", 12)]


@pytest.mark.parametrize(
    "task, overrides",
    [
        ("lra_listops", SMALL_LISTOPS + SIZES),
        ("lra_pathfinder", SIZES + ["task.pooling=last"]),
        ("lra_retrieval", []),
        ("lra_image_grey", []),
    ],
)
def test_a_tiny_run_trains_and_reports_accuracy_per_sequence(tmp_path, task, overrides):
    if task == "lra_retrieval":
        rows = [(index % 2, "a", "b", "text " * (index + 1), "other " * (3 - index % 3)) for index in range(16)]
        for split in ("train", "eval", "test"):
            write_retrieval(tmp_path / "tsv_data" / f"new_aan_pairs.{split}.tsv", rows)
        overrides = [f"task.source={tmp_path / 'tsv_data'}"]
    if task == "lra_image_grey":
        overrides = [f"task.source={write_cifar(tmp_path / 'cifar', images_per_batch=4)}", "task.val_fraction=0.4"]
    config = compose_run_config(
        [
            "model=lstm",
            f"task={task}",
            "trainer.max_steps=2",
            "trainer.batch_size=4",
            "trainer.val_every_steps=2",
            "trainer.num_threads=1",
            "model.embedding_dim=8",
            *overrides,
        ]
    )
    metrics = run_training(config, tmp_path / "run")
    assert metrics["train/steps"] == 2 and 0 <= metrics["val/accuracy"] <= 1 and 0 <= metrics["test/accuracy"] <= 1
    chance = 0.5 if task in ("lra_retrieval", "lra_pathfinder") else 0.1
    assert np.isclose(metrics["test/scaled_accuracy"], (metrics["test/accuracy"] - chance) / (1 - chance))


@pytest.mark.parametrize("task, channels", [("lra_image_grey", 1), ("lra_image_rgb", 3)])
def test_generated_image_batches_are_the_same_images_in_grey_and_colour(monkeypatch, tmp_path, task, channels):
    monkeypatch.setenv("XLSTM_SUITE_DATA_CACHE", str(tmp_path))
    config = compose_run_config(["model=lstm", f"task={task}", "task.source=generated", *SIZES])
    module = task_family("lra_image").build_datamodule(config.task, 4)
    inputs, targets = next(iter(module.train_dataloader()))
    assert tuple(inputs.shape) == (4, 1024, channels) and tuple(targets.shape) == (4, 1024)
    assert (targets == targets[:, :1]).all() and ((targets >= 0) & (targets < 10)).all()


def test_pooled_cifar_images_are_torchs_average_pool_of_the_release_images(tmp_path):
    torch = pytest.importorskip("torch")
    cifar = write_cifar(tmp_path / "cifar-10-batches-py", images_per_batch=4)
    base = {**task_config("lra_image_rgb"), "source": str(cifar)}
    full = ImageDataModule(task_family("lra_image").config(**base), batch_size=2).stream_set(TEST_STREAM)
    pooled = ImageDataModule(task_family("lra_image").config(**{**base, "pool": 2}), batch_size=2).stream_set(
        TEST_STREAM
    )
    images = torch.from_numpy(full.pixels.astype(np.float32)).reshape(4, 32, 32, 3).permute(0, 3, 1, 2)  # (N, C, H, W)
    expected = torch.nn.functional.avg_pool2d(images, 2).round().permute(0, 2, 3, 1).reshape(4, 256, 3)
    assert pooled.pixels.shape == (4, 256, 3) and np.array_equal(pooled.pixels, expected.numpy().astype(np.uint8))
    assert task_family("lra_image").config(**{**base, "pool": 2}).spec().fixed_length == 256
    inputs, targets = pooled.examples(np.arange(2))
    assert inputs.shape == (2, 256, 3) and targets.shape == (2, 256)
