"""MQAR (Arora et al. 2023; paper Appendix B.1.2): layout, the pairs the targets ask for, the power-law gaps, seeding,
the data cache, config checks before any compute, and a tiny training run.

The distribution tests are chi-square tests at a false-alarm rate of alpha = 1e-4: a correct sampler fails one with
probability 1e-4 for a random seed (the seeds here are fixed, so each test is deterministic).
"""

import itertools
import math
import re

import numpy as np
import pytest
from scipy import stats

from experiments.config.configuration import ConfigError, compose_run_config
from experiments.config.validation import task_problems, validate_run_config
from experiments.training.train import run_training
from tasks import data_cache
from tasks.fixed_sets import TEST_STREAM, TRAIN_STREAM, VALIDATION_STREAM, TrainingBatches
from tasks.mqar import MQARTaskConfig, generate
from tasks.mqar.data import MQARDataModule, mqar_set
from tasks.mqar.generator import distinct_uniform
from tasks.spec import IGNORE_INDEX

ALPHA = 1e-4


def small_config(**changes) -> MQARTaskConfig:
    fields = dict(
        name="mqar",
        family="mqar",
        vocab_size=128,
        context_length=64,
        num_kv_pairs=8,
        power_a=0.01,
        random_non_queries=False,
        data_seed=0,
        train_samples=64,
        val_samples=16,
        test_samples=16,
    )
    return MQARTaskConfig(**{**fields, **changes})


def draw(vocab_size=128, context_length=64, num_kv_pairs=8, power_a=0.01, samples=200, seed=0, fill_seed=None):
    return generate(vocab_size, context_length, num_kv_pairs, power_a, samples, np.random.default_rng(seed), fill_seed)


def chi_square_p(counts: np.ndarray, probabilities: np.ndarray) -> float:
    return stats.chisquare(counts, counts.sum() * probabilities / probabilities.sum()).pvalue


def power_law(slots: int, power_a: float) -> np.ndarray:
    weights = np.arange(1, slots + 1, dtype=np.float64) ** (power_a - 1)
    return weights / weights.sum()


@pytest.mark.parametrize("vocab_size, context_length, num_kv_pairs", [(128, 64, 8), (65, 64, 16), (16, 10, 2)])
def test_prefix_holds_distinct_keys_and_values_from_their_halves_of_the_vocabulary(
    vocab_size, context_length, num_kv_pairs
):
    samples = draw(vocab_size, context_length, num_kv_pairs)
    inputs, targets = samples.examples(np.arange(len(samples)))  # (N, L)
    assert inputs.shape == targets.shape == (200, context_length)
    keys, values = inputs[:, 0 : 2 * num_kv_pairs : 2], inputs[:, 1 : 2 * num_kv_pairs : 2]  # (N, KV)
    assert (keys == samples.keys).all() and (values == samples.values).all()
    half = vocab_size // 2
    assert keys.min() >= 1 and keys.max() < half and values.min() >= half and values.max() < vocab_size
    assert all(len(set(row)) == num_kv_pairs for row in keys) and all(len(set(row)) == num_kv_pairs for row in values)
    assert (targets[:, : 2 * num_kv_pairs] == IGNORE_INDEX).all()


@pytest.mark.parametrize("random_fill", [False, True])
def test_each_key_is_queried_once_and_its_target_is_its_value(random_fill):
    kv = 8
    samples = draw(num_kv_pairs=kv, fill_seed=(0, 0, 4) if random_fill else None)
    inputs, targets = samples.examples(np.arange(len(samples)))
    for row_inputs, row_targets in zip(inputs, targets):
        pairs = dict(zip(row_inputs[0 : 2 * kv : 2], row_inputs[1 : 2 * kv : 2]))
        scored = np.flatnonzero(row_targets != IGNORE_INDEX)
        assert len(scored) == kv
        assert ((scored - 2 * kv) % 2 == 0).all() and scored.min() >= 2 * kv
        assert sorted(row_inputs[scored]) == sorted(pairs)  # every key once
        assert all(row_targets[position] == pairs[row_inputs[position]] for position in scored)


def test_zero_fill_and_random_fill_differ_only_off_the_prefix_and_queries():
    zero = draw(samples=300)
    random = draw(samples=300, fill_seed=(0, 0, 4))
    zero_inputs, zero_targets = zero.examples(np.arange(300))
    random_inputs, random_targets = random.examples(np.arange(300))
    scored = zero_targets != IGNORE_INDEX  # (N, L)
    free = ~scored
    free[:, :16] = False  # the prefix
    assert (zero_targets == random_targets).all() and (zero_inputs[~free] == random_inputs[~free]).all()
    assert (zero_inputs[free] == 0).all()
    filled = random_inputs[free]
    assert filled.min() >= 0 and filled.max() < 128
    assert chi_square_p(np.bincount(filled, minlength=128), np.ones(128)) > ALPHA  # uniform over the vocabulary
    # a sample's filling is its own: the same whatever batch it comes in
    assert (random.examples(np.array([7]))[0] == random.examples(np.array([3, 7]))[0][1]).all()


def test_first_gap_follows_the_power_law():
    """The first key's query gap is the first of the successive draws: exactly (g + 1)^(a - 1), normalised."""
    samples = draw(num_kv_pairs=4, samples=20_000, seed=1)  # 28 slots
    counts = np.bincount(samples.gaps[:, 0], minlength=28)
    assert chi_square_p(counts, power_law(28, 0.01)) > ALPHA


def test_a_uniform_gap_sampler_fails_the_power_law_test():
    samples = draw(num_kv_pairs=4, samples=20_000, seed=1, power_a=1.0)  # a = 1: uniform gaps
    counts = np.bincount(samples.gaps[:, 0], minlength=28)
    assert chi_square_p(counts, np.ones(28)) > ALPHA
    assert chi_square_p(counts, power_law(28, 0.01)) < ALPHA


def test_gaps_are_successive_draws_without_replacement():
    """Ordered pairs of gaps from 3 slots: P(g1, g2) = p(g1) p(g2) / (1 - p(g1)), as numpy's choice(replace=False)."""
    samples = draw(vocab_size=16, context_length=10, num_kv_pairs=2, samples=20_000, seed=2)  # 3 slots
    p = power_law(3, 0.01)
    pairs = list(itertools.permutations(range(3), 2))
    counts = np.array([np.sum((samples.gaps[:, 0] == a) & (samples.gaps[:, 1] == b)) for a, b in pairs])
    assert chi_square_p(counts, np.array([p[a] * p[b] / (1 - p[a]) for a, b in pairs])) > ALPHA


def test_distinct_draws_are_uniform_over_ordered_tuples():
    drawn = distinct_uniform(np.random.default_rng(3), 5, 9, 2, 12_000)  # ordered pairs of {5, 6, 7, 8}
    pairs = list(itertools.permutations(range(5, 9), 2))
    counts = np.array([np.sum((drawn[:, 0] == a) & (drawn[:, 1] == b)) for a, b in pairs])
    assert chi_square_p(counts, np.ones(len(pairs))) > ALPHA


def test_the_same_seed_gives_the_same_samples_and_the_streams_are_disjoint():
    first, again, other = draw(seed=5), draw(seed=5), draw(seed=6)
    for name in ("keys", "values", "gaps"):
        assert (getattr(first, name) == getattr(again, name)).all()
        assert (getattr(first, name) != getattr(other, name)).any()
    config = small_config()
    sets = {stream: mqar_set(config, stream, 64) for stream in (TRAIN_STREAM, VALIDATION_STREAM, TEST_STREAM)}
    rows = {
        stream: {samples.examples(np.array([i]))[0].tobytes() for i in range(64)} for stream, samples in sets.items()
    }
    assert not rows[TRAIN_STREAM] & rows[VALIDATION_STREAM] and not rows[TRAIN_STREAM] & rows[TEST_STREAM]
    assert not rows[VALIDATION_STREAM] & rows[TEST_STREAM]


def test_a_training_epoch_visits_each_sample_once_in_a_seeded_order():
    samples = mqar_set(small_config(), TRAIN_STREAM, 64)
    batches = list(itertools.islice(iter(TrainingBatches(samples, 16, data_seed=0)), 8))  # two epochs
    again = list(itertools.islice(iter(TrainingBatches(samples, 16, data_seed=0)), 8))
    assert all((a[0] == b[0]).all() for a, b in zip(batches, again))
    epoch = np.concatenate([inputs[:, :16].numpy() for inputs, _ in batches[:4]])
    assert sorted(map(bytes, epoch)) == sorted(map(bytes, samples.examples(np.arange(64))[0][:, :16]))
    assert not all((a[0] == b[0]).all() for a, b in zip(batches[:4], batches[4:]))  # the next epoch reorders


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(data_cache.CACHE_VARIABLE, str(tmp_path))
    return tmp_path


def test_a_cached_set_is_read_back_without_generating(cache, monkeypatch):
    config = small_config()
    first = mqar_set(config, TRAIN_STREAM, 64)
    [entry] = cache.glob("mqar-*.npz")
    monkeypatch.setattr("tasks.mqar.data.generate", lambda *arguments: pytest.fail("generated again"))
    again = mqar_set(config, TRAIN_STREAM, 64)
    assert (again.keys == first.keys).all() and (again.gaps == first.gaps).all()
    filled = mqar_set(small_config(random_non_queries=True), TRAIN_STREAM, 64)  # same entry: fillings are not cached
    assert filled.fill_seed is not None and (filled.keys == first.keys).all()
    assert list(cache.glob("mqar-*.npz")) == [entry]


def _damage_by_truncating(path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _damage_by_flipping_bytes(path):
    content = bytearray(path.read_bytes())
    content[len(content) // 3 : len(content) // 3 + 8] = bytes(8)
    path.write_bytes(bytes(content))


def _damage_the_arrays_keeping_the_checksum(path):
    with np.load(path) as stored:
        content = {key: stored[key] for key in stored.files}
    content["keys"][0, 0] += 1
    np.savez(path, **content)


@pytest.mark.parametrize(
    "damage", [_damage_by_truncating, _damage_by_flipping_bytes, _damage_the_arrays_keeping_the_checksum]
)
def test_a_damaged_cache_file_is_reported_and_generated_again(cache, capsys, damage):
    config = small_config()
    first = mqar_set(config, VALIDATION_STREAM, 64)
    [entry] = cache.glob("mqar-*.npz")
    damage(entry)
    again = mqar_set(config, VALIDATION_STREAM, 64)
    warning = capsys.readouterr().err
    assert warning.count("\n") == 1 and f"warning: data cache file {entry} is " in warning
    assert (again.keys == first.keys).all() and (again.values == first.values).all()
    assert mqar_set(config, VALIDATION_STREAM, 64).keys.tolist() == first.keys.tolist()
    assert capsys.readouterr().err == ""  # the entry was written whole again


@pytest.mark.parametrize(
    "change, message",
    [
        ({"context_length": 63}, "task.context_length=63 must be even"),
        (
            {"vocab_size": 17, "num_kv_pairs": 8},
            "task.vocab_size=17 has too few keys for num_kv_pairs=8: keys are "
            "distinct tokens of [1, vocab_size // 2), valid: vocab_size >= 18",
        ),
        (
            {"num_kv_pairs": 17},
            "task.num_kv_pairs=17 is too many for context_length=64: 4 * num_kv_pairs <= "
            "context_length, valid: 1 <= num_kv_pairs <= 16",
        ),
    ],
)
def test_impossible_layouts_are_rejected_by_the_torch_free_validation(change, message):
    task = {**small_config().__dict__, **change}
    assert any(problem.startswith(message) for problem in task_problems(task))
    overrides = [f"task.{name}={value}" for name, value in change.items()]
    with pytest.raises(ConfigError, match=re.escape(message)):
        validate_run_config(compose_run_config(["model=llama", "task=mqar", *overrides]))
    with pytest.raises(ValueError, match=re.escape(message.removeprefix("task."))):
        draw(**{"vocab_size": 128, "context_length": 64, "num_kv_pairs": 8, **change})


def test_spec_scores_against_guessing_a_value_token():
    spec = MQARDataModule(small_config(), batch_size=8).spec
    assert (spec.name, spec.input_kind, spec.input_size, spec.num_classes) == ("mqar", "tokens", 128, 128)
    assert math.isclose(spec.random_accuracy, 1 / 64) and spec.group == "associative recall"


def test_tiny_training_run_finishes(tmp_path):
    config = compose_run_config(
        [
            "model=llama",
            "task=mqar",
            "trainer.max_steps=2",
            "trainer.batch_size=4",
            "trainer.val_every_steps=2",
            "trainer.num_threads=1",
            "trainer.checkpoint=false",
            "model.embedding_dim=16",
            "task.vocab_size=64",
            "task.context_length=32",
            "task.num_kv_pairs=4",
            "task.train_samples=16",
            "task.val_samples=8",
            "task.test_samples=8",
            "task.random_non_queries=true",
        ]
    )
    metrics = run_training(config, tmp_path)
    assert metrics["train/steps"] == 2 and 0 <= metrics["val/accuracy"] <= 1 and 0 <= metrics["test/accuracy"] <= 1


def test_contexts_longer_than_the_vocabulary_are_valid_when_the_keys_suffice():
    """The xLSTM paper evaluates CL 8192 with V 8192 (MQAR-Experiment 3): zoology's V > L is not needed, only KV
    distinct keys of [1, V // 2) and values of [V // 2, V)."""
    assert task_problems({**small_config().__dict__, "vocab_size": 32, "context_length": 64, "num_kv_pairs": 15}) == []
    drawn = draw(vocab_size=32, context_length=64, num_kv_pairs=15)
    assert all(len(set(row)) == 15 for row in drawn.keys.tolist())
    assert drawn.keys.min() >= 1 and drawn.keys.max() < 16 and drawn.values.min() >= 16 and drawn.values.max() < 32
