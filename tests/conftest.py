"""Test-wide settings: the sweep runner's fixture artifact is found through XLSTM_SUITE_ARTIFACTS, and the disk caches
of composed configs and of generated task data are off (each test composes and generates what it uses; tests of a
cache switch it on). All are inherited by the sweep subprocesses the tests start."""

import os
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
os.environ["XLSTM_SUITE_ARTIFACTS"] = str(FIXTURES)
os.environ["XLSTM_SUITE_COMPOSE_CACHE"] = "off"
os.environ["XLSTM_SUITE_DATA_CACHE"] = "off"
