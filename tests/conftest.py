"""Test-wide settings: the sweep runner's fixture artifact is found through XLSTM_SUITE_ARTIFACTS; composed configs
and planned grids are cached in a folder of the test session's own (shared by its xdist workers and the sweeps they
start, removed at the end: a grid that several tests plan is composed once; the user's cache is never read); the
disk cache of generated task data is off (each test generates what it uses). Tests that count composes switch the
compose cache off (tests/experiments/config/test_cell_composer.py), tests of a cache give it a folder of their own. All are inherited
by the subprocesses the tests start. ``artifact_folder``: a folder for a test's own artifacts, found besides the
fixtures."""

import os
import shutil
import tempfile
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
SESSION_CACHE = "XLSTM_SUITE_TEST_SESSION_CACHE"  # set by the process that made the folder (xdist's controller)
os.environ["XLSTM_SUITE_ARTIFACTS"] = str(FIXTURES)
MADE_THE_CACHE = SESSION_CACHE not in os.environ
if MADE_THE_CACHE:  # only here: the workers and subprocesses that inherit the variable make no folder of their own
    os.environ[SESSION_CACHE] = tempfile.mkdtemp(prefix="xlstm-suite-test-compose-")
os.environ["XLSTM_SUITE_COMPOSE_CACHE"] = os.environ[SESSION_CACHE]
os.environ["XLSTM_SUITE_DATA_CACHE"] = "off"


def pytest_sessionfinish(session, exitstatus):
    if MADE_THE_CACHE:
        shutil.rmtree(os.environ[SESSION_CACHE], ignore_errors=True)


# The longest tests (a minute or two each: the README's command groups train real runs) run first, each worker
# taking the next when it is free (make test): collected last, they ran alone at the end while the other core idled.
LONGEST_FIRST = ("tests/test_readme.py::test_every_readme_command_runs[",)


def pytest_collection_modifyitems(config, items):
    """The longest tests first; tests marked ``gpu`` skip, with the reason, where torch sees no CUDA device."""
    items.sort(key=lambda item: not item.nodeid.startswith(LONGEST_FIRST))  # stable: the order within each part kept
    gpu_tests = [item for item in items if "gpu" in item.keywords]
    if not gpu_tests:
        return
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device (torch.cuda.is_available() is False)")
    for item in gpu_tests:
        item.add_marker(skip)


@pytest.fixture
def artifact_folder(tmp_path, monkeypatch):
    """A folder of the test's own artifacts, found by the sweep runner besides the fixture artifacts."""
    folder = tmp_path / "artifacts"
    folder.mkdir()
    monkeypatch.setenv("XLSTM_SUITE_ARTIFACTS", os.pathsep.join([os.environ["XLSTM_SUITE_ARTIFACTS"], str(folder)]))
    return folder
