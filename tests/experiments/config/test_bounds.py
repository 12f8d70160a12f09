"""Every number of a run config has an upper bound a run can reach (steps, batch, lengths, samples, processes), so a
typo is refused before anything runs; the local launcher runs at most as many workers as there are cores."""

import dataclasses
import io
import os
import typing
from datetime import UTC, datetime

import pytest
from omegaconf import OmegaConf
from rich.console import Console

from experiments.config import bounds
from experiments.config.configuration import ConfigError, compose_run_config
from experiments.config.evaluation_kinds import EVALUATION_KINDS
from experiments.config.run_schema import SECTIONS, ModelSection, RunConfig
from experiments.config.validation import validate_run_config
from experiments.sweeps.run_store import run_directory, write_result, write_run_inputs
from experiments.sweeps.sweep import check_jobs, run_sweep
from tasks.registry import task_families
from tests.experiments.sweeps.test_sweep import NO_TORCH
from tests.sweep_fakes import RECORD_RUN, small_artifact

SCHEMAS = {
    **{f"{name} section": schema for name, schema in SECTIONS.items()},
    "model section": ModelSection,
    "run config": RunConfig,
    **{f"task family {name}": family.config for name, family in task_families().items()},
    **{f"evaluation kind {name}": kind.settings for name, kind in EVALUATION_KINDS.items()},
}


def numeric(annotation) -> bool:
    """Whether a field's type admits a number (an int or float, alone, in a union or a list)."""
    if annotation in (int, float):
        return True
    return any(numeric(member) for member in typing.get_args(annotation) if member is not bool)


@pytest.mark.parametrize("schema", SCHEMAS.values(), ids=SCHEMAS.keys())
def test_every_numeric_key_has_an_upper_bound(schema):
    hints = typing.get_type_hints(schema)
    unbounded = [
        field.name
        for field in dataclasses.fields(schema)
        if numeric(hints[field.name]) and "at_most" not in field.metadata
    ]
    assert unbounded == []


TRAINER_BOUNDS = {
    "trainer.max_steps": bounds.MAX_STEPS,
    "trainer.batch_size": bounds.MAX_BATCH,
    "trainer.val_every_steps": bounds.MAX_STEPS,
    "trainer.num_threads": bounds.MAX_THREADS,
    "task.eval_max_length": bounds.MAX_LENGTH,
    "seed": bounds.MAX_SEED,
}


@pytest.fixture(scope="module")
def parity_config():
    return compose_run_config(["model=xlstm_1_0", "task=parity"])


@pytest.mark.parametrize("key, bound", TRAINER_BOUNDS.items(), ids=TRAINER_BOUNDS.keys())
def test_a_value_above_its_bound_is_refused_and_the_bound_itself_is_accepted(parity_config, key, bound):
    config = parity_config.copy()
    OmegaConf.update(config, key, bound)
    validate_run_config(config)
    OmegaConf.update(config, key, bound + 1)
    with pytest.raises(ConfigError, match=f"^{key}={bound + 1} must be <= {bound}$"):
        validate_run_config(config)


def test_a_thirty_digit_max_steps_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(ConfigError, match=r"trainer.max_steps=123456789012345678901234567890 must be <= 10000000"):
        run_sweep(
            small_artifact(["xlstm_1_0"]),
            "smoke",
            root=tmp_path / "runs",
            run_function=RECORD_RUN,
            overrides=["trainer.max_steps=123456789012345678901234567890"],
        )
    assert not (tmp_path / "runs").exists()


def test_jobs_above_the_core_count_are_capped_with_one_line(tmp_path):
    cores = len(os.sched_getaffinity(0))
    console = Console(file=io.StringIO(), width=200)
    assert check_jobs(cores, console) == cores and console.file.getvalue() == ""
    assert check_jobs(1000, console) == cores
    assert (
        console.file.getvalue()
        == f"--jobs 1000 is more than the {cores} CPU cores here: running {cores} workers at a time\n"
    )
    artifact = small_artifact(["xlstm_1_0"])
    [run] = artifact.runs("smoke", [NO_TORCH])
    write_run_inputs(run_directory(run, tmp_path), run)  # done already: the sweep starts no worker
    write_result(run_directory(run, tmp_path), run, {"val/scaled_accuracy": 0.5}, datetime.now(UTC))
    assert (
        run_sweep(
            artifact, "smoke", jobs=1000, root=tmp_path, run_function=RECORD_RUN, overrides=[NO_TORCH], console=console
        )
        == 0
    )
    assert console.file.getvalue().count("--jobs 1000 is more than") == 2
