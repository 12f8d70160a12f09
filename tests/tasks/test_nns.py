"""Nearest Neighbor Search (paper Figure lstmProblems, left; Appendix B): layout and padding, unit vectors and values,
every target against a brute-force nearest neighbour, uniform lengths, seeding and disjoint sets, config checks before
any compute, and a tiny regression training run that logs val/mse.

The length test is a chi-square test at a false-alarm rate of alpha = 1e-4: a correct sampler fails it with
probability 1e-4 for a random seed (the seeds here are fixed, so the test is deterministic).
"""

import math

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats

from experiments.config.configuration import ConfigError, compose_run_config
from experiments.config.validation import task_problems, validate_run_config
from experiments.training.train import run_training
from models.registry import build_backbone
from tasks.fixed_sets import TEST_STREAM, TRAIN_STREAM, VALIDATION_STREAM
from tasks.nns import NNSTaskConfig, generate
from tasks.nns.data import NNSDataModule, nns_set

ALPHA = 1e-4


def small_config(**changes) -> NNSTaskConfig:
    fields = dict(
        name="nns",
        family="nns",
        vector_dim=2,
        min_length=2,
        max_length=64,
        data_seed=0,
        train_samples=64,
        val_samples=16,
        test_samples=16,
    )
    return NNSTaskConfig(**{**fields, **changes})


def draw(samples=300, seed=0, vector_dim=2, min_length=2, max_length=64):
    return generate(vector_dim, min_length, max_length, samples, np.random.default_rng(seed))


def brute_force_answer(sequence: list[list[float]], length: int) -> float:
    """The value of the vector nearest (Euclidean) to the key x_0 among x_1 .. x_{length-1}, in plain Python."""
    key = sequence[0][:-1]
    best_distance, best_value = math.inf, None
    for position in range(1, length):
        *vector, value = sequence[position]
        distance = math.sqrt(sum((a - b) ** 2 for a, b in zip(vector, key)))
        if distance < best_distance:
            best_distance, best_value = distance, value
    return best_value


def test_the_paper_defaults():
    task = compose_run_config(["model=lstm", "task=nns"]).task
    assert (task.vector_dim, task.max_length, task.train_samples, task.val_samples) == (2, 64, 8192, 8192)
    spec = NNSDataModule(small_config(), batch_size=8).spec
    assert (spec.input_kind, spec.input_size, spec.num_classes, spec.output_kind) == ("vectors", 3, 1, "scalar")


def test_a_batch_is_padded_with_zeros_after_each_end_and_scored_at_the_end_only():
    samples = draw()
    rows = np.array([5, 17, 42, 99])
    inputs, targets = samples.examples(rows)
    lengths = samples.lengths[rows]
    assert inputs.dtype == targets.dtype == np.float32
    assert inputs.shape == (4, lengths.max(), 3) and targets.shape == (4, lengths.max())
    for row, length in enumerate(lengths):
        assert (inputs[row, length:] == 0).all()
        scored = np.flatnonzero(~np.isnan(targets[row]))
        assert scored.tolist() == [length - 1] and targets[row, length - 1] == samples.answers[rows[row]]


def test_vectors_have_unit_norm_and_values_lie_in_the_unit_interval():
    samples = draw(vector_dim=3)
    inside = np.arange(64) < samples.lengths[:, None]  # (N, M)
    norms = np.linalg.norm(samples.vectors, axis=2)  # (N, M)
    assert np.allclose(norms[inside], 1, atol=1e-6) and (norms[~inside] == 0).all()
    values = samples.values[inside]
    assert values.min() >= 0 and values.max() < 1 and values.std() > 0.25  # uniform: std 0.289
    assert samples.lengths.min() >= 2 and samples.lengths.max() <= 64


@pytest.mark.parametrize("vector_dim", [2, 3])
def test_every_target_is_the_value_of_the_brute_force_nearest_neighbour(vector_dim):
    samples = draw(samples=60, seed=vector_dim, vector_dim=vector_dim)
    inputs, targets = samples.examples(np.arange(60))
    for sequence, target, length in zip(inputs.tolist(), targets.tolist(), samples.lengths.tolist()):
        assert target[length - 1] == brute_force_answer(sequence, length)


def test_the_key_value_is_drawn_but_never_the_answer_of_a_single_candidate():
    samples = draw(samples=400, min_length=2, max_length=2)  # the key and one vector: the answer is that vector's
    assert (samples.answers == samples.values[:, 1]).all() and (samples.answers != samples.values[:, 0]).all()


def test_lengths_are_uniform_over_the_stated_range():
    lengths = draw(samples=20_000, seed=1).lengths
    counts = np.bincount(lengths, minlength=65)[2:]  # lengths 2..64
    assert counts.sum() == 20_000 and stats.chisquare(counts).pvalue > ALPHA
    assert stats.chisquare(np.bincount(lengths, minlength=66)[1:]).pvalue < ALPHA  # 1..65 is not the range


def test_padding_does_not_change_a_causal_models_output_at_the_scored_position():
    samples = draw()
    torch.manual_seed(0)
    encoder, backbone = torch.nn.Linear(3, 8), build_backbone("lstm", embedding_dim=8, num_blocks=1)
    rows = np.array([3, int(np.argmax(samples.lengths))])  # the second is the longest: the first gets padding
    inputs, targets = samples.examples(rows)
    length = samples.lengths[rows[0]]
    alone, _ = samples.examples(rows[:1])
    with torch.no_grad():
        batched = backbone(encoder(torch.from_numpy(inputs)))[0, length - 1]
        single = backbone(encoder(torch.from_numpy(alone)))[0, length - 1]
    assert inputs.shape[1] > length and torch.allclose(batched, single, atol=1e-6)


def test_the_same_seed_gives_the_same_samples_and_the_sets_are_disjoint():
    first, again, other = draw(seed=5), draw(seed=5), draw(seed=6)
    for name in ("vectors", "values", "lengths", "answers"):
        assert (getattr(first, name) == getattr(again, name)).all()
    assert (first.vectors != other.vectors).any()
    config = small_config()
    keys = {
        stream: {bytes(key) for key in nns_set(config, stream, 64).vectors[:, 0]}
        for stream in (TRAIN_STREAM, VALIDATION_STREAM, TEST_STREAM)
    }
    assert all(len(stream_keys) == 64 for stream_keys in keys.values())
    assert not keys[TRAIN_STREAM] & keys[VALIDATION_STREAM] and not keys[TRAIN_STREAM] & keys[TEST_STREAM]
    assert not keys[VALIDATION_STREAM] & keys[TEST_STREAM]


@pytest.mark.parametrize(
    "change, message",
    [
        ({"min_length": 1}, "task.min_length=1 must be >= 2"),
        ({"max_length": 1}, "task.max_length=1 must be >= 2"),
        ({"min_length": 65}, "task.min_length=65 must be <= max_length=64; valid: 2 <= min_length <= 64"),
        ({"vector_dim": 1}, "task.vector_dim=1 must be >= 2"),
        ({"train_samples": 0}, "task.train_samples=0 must be >= 1"),
        ({"val_samples": 0}, "task.val_samples=0 must be >= 1"),
        ({"test_samples": 0}, "task.test_samples=0 must be >= 1"),
        ({"data_seed": -1}, "task.data_seed=-1 must be >= 0"),
    ],
)
def test_bad_values_are_rejected_by_the_torch_free_validation(change, message):
    task = {**small_config().__dict__, **change}
    assert any(problem.startswith(message) for problem in task_problems(task))
    overrides = [f"task.{name}={value}" for name, value in change.items()]
    with pytest.raises(ConfigError, match=message):
        validate_run_config(compose_run_config(["model=lstm", "task=nns", *overrides]))


@pytest.mark.parametrize(
    "change, message",
    [
        ({"min_length": 65}, "min_length=65 must be <= max_length=64; valid: 2 <= min_length <= 64"),
        ({"min_length": 1}, "min_length=1 must be >= 2"),
        ({"vector_dim": 1}, "vector_dim=1 must be >= 2"),
        ({"samples": 0}, "samples=0 must be >= 1"),
    ],
)
def test_the_generator_rejects_bad_values_before_drawing(change, message):
    with pytest.raises(ValueError, match=message):
        draw(**change)


def test_tiny_regression_run_logs_val_and_test_mse(tmp_path):
    config = compose_run_config(
        [
            "model=lstm",
            "task=nns",
            "trainer.max_steps=4",
            "trainer.batch_size=8",
            "trainer.val_every_steps=2",
            "trainer.num_threads=1",
            "model.embedding_dim=16",
            "task.train_samples=32",
            "task.val_samples=16",
            "task.test_samples=16",
        ]
    )
    metrics = run_training(config, tmp_path)
    assert metrics["train/steps"] == 4 and metrics["val/mse"] == metrics["val/loss"] >= 0
    assert 0 <= metrics["test/mse"] < 1 and not any("accuracy" in name for name in metrics)
    logged = pd.read_csv(tmp_path / "metrics.csv")
    assert logged["val/mse"].notna().sum() == 3  # steps 2 and 4, and the final validation of the best checkpoint
    assert (tmp_path / "checkpoints" / "last.ckpt").exists()
