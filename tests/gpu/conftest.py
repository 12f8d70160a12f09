"""The GPU suite's fixtures (its tests are marked ``gpu``: tests/conftest.py skips them without a CUDA device).

- The run's machine and stack are recorded as test-suite properties of the junit XML (``--junitxml``), and each test's
  ``model`` or ``kernel`` parameter as its property, for the report (``python -m tests.gpu_report``).
- ``started_runs``: the training runs of tests/gpu/training_runs.py that the selected tests check, all started at
  the first test of this folder, side by side (they are tiny: the GPU has room, the CPU cores compile), so that they
  train while the kernel tests run; each test waits for its own.
"""

import os
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest
import torch

from experiments.paths import REPOSITORY_ROOT
from tests.gpu.training_runs import TrainingRun, stop_all, train
from tests.gpu_report import environment

FOLDER = Path(__file__).parent
REPORTED_PARAMETERS = ("model", "kernel")  # a test's parameter of these names is its property in the report
PARALLEL_RUNS = max(1, min(12, (os.cpu_count() or 4) - 4))  # leaves cores to pytest and the kernel probes


def pytest_collection_modifyitems(items):
    for item in items:
        parameters = getattr(item, "callspec", None)
        if parameters is None or FOLDER not in item.path.parents:
            continue
        for name in REPORTED_PARAMETERS:
            if name in parameters.params:
                value = parameters.params[name]
                item.user_properties.append((name, value.model if isinstance(value, TrainingRun) else str(value)))


@pytest.fixture(scope="session", autouse=True)
def recorded_environment(record_testsuite_property):
    for name, value in environment(REPOSITORY_ROOT).items():
        record_testsuite_property(name, value)


@pytest.fixture(scope="session", autouse=True)
def started_runs(request, tmp_path_factory) -> dict[str, Future]:
    """Run name -> the future of its Finished run, for every selected test's run, started at once."""
    runs = {
        item.callspec.params["model"].name: item.callspec.params["model"]
        for item in request.session.items
        if isinstance(getattr(getattr(item, "callspec", None), "params", {}).get("model"), TrainingRun)
    }
    if not runs or not torch.cuda.is_available():
        yield {}
        return
    root = tmp_path_factory.mktemp("training_runs")
    pool = ThreadPoolExecutor(PARALLEL_RUNS)
    yield {name: pool.submit(train, run, root / name) for name, run in runs.items()}
    pool.shutdown(wait=False, cancel_futures=True)  # an interrupted suite: the queued runs never start,
    stop_all()  # and those under way are killed
    pool.shutdown(wait=True)
