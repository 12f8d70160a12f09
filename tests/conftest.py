"""Test-wide settings: the sweep runner's fixture artifact is found through XLSTM_SUITE_ARTIFACTS, and the disk caches
of composed configs and of generated task data are off (each test composes and generates what it uses; tests of a
cache switch it on). All are inherited by the sweep subprocesses the tests start. ``artifact_folder``: a folder for a
test's own artifacts, found besides the fixtures."""

import os
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
os.environ["XLSTM_SUITE_ARTIFACTS"] = str(FIXTURES)
os.environ["XLSTM_SUITE_COMPOSE_CACHE"] = "off"
os.environ["XLSTM_SUITE_DATA_CACHE"] = "off"


def pytest_collection_modifyitems(config, items):
    """Tests marked ``gpu`` skip, with the reason, where torch sees no CUDA device."""
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
