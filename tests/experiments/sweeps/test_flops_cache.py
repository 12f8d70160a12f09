"""A dry run's FLOPs per token are kept on disk (experiments.sweeps.flops_cache): the second estimate of a model
config builds no backbone and gives the same numbers; a damaged file is ignored with a warning and replaced."""

import pytest

import models.flops
from experiments.config import compose_cache
from experiments.sweeps import flops_cache

LLAMA = dict(
    name="llama", embedding_dim=16, num_blocks=1, options={}, sequence_length=8, output_size=4, input_features=None
)


@pytest.fixture
def built(tmp_path, monkeypatch):
    """The caches in a fresh folder; the model configs models.flops is asked for."""
    monkeypatch.setenv(compose_cache.CACHE_VARIABLE, str(tmp_path / "cache"))
    flops_cache.known_entries.cache_clear()
    calls, computed = [], models.flops.flops_per_token

    def counting(name, *arguments, **keywords):
        calls.append(name)
        return computed(name, *arguments, **keywords)

    monkeypatch.setattr(models.flops, "flops_per_token", counting)
    yield calls
    flops_cache.known_entries.cache_clear()


def expected() -> tuple[float, float]:
    per_token = models.flops.flops_per_token(**LLAMA)
    return per_token.forward, per_token.training


def test_a_second_process_reads_the_estimate_and_builds_nothing(built):
    first = flops_cache.flops_per_token(**LLAMA)
    flops_cache.known_entries.cache_clear()  # as a new process
    assert flops_cache.flops_per_token(**LLAMA) == first == expected()
    assert built == ["llama", "llama"]  # the first estimate and expected(): the second read the file


def test_a_damaged_file_is_ignored_with_a_warning_and_replaced(built, capsys):
    flops_cache.flops_per_token(**LLAMA)
    path = compose_cache.cache_folder() / flops_cache.FILE_NAME
    path.write_text('{"key": [1.0]}')
    flops_cache.known_entries.cache_clear()
    assert flops_cache.flops_per_token(**LLAMA) == expected()
    assert f"FLOPs cache {path} is damaged" in capsys.readouterr().err
    flops_cache.known_entries.cache_clear()
    flops_cache.flops_per_token(**LLAMA)
    assert "damaged" not in capsys.readouterr().err and built == ["llama", "llama", "llama"]


def test_a_bad_value_is_named_and_not_kept(built):
    with pytest.raises(ValueError, match="sequence_length=0 must be a positive integer"):
        flops_cache.flops_per_token(**(LLAMA | {"sequence_length": 0}))
    assert not (compose_cache.cache_folder() / flops_cache.FILE_NAME).exists()
