"""Test-wide settings: the sweep runner's fixture artifact is found through XLSTM_SUITE_ARTIFACTS, and the disk cache
of composed configs is off (each test composes what it plans; tests of the cache switch it on). Both are inherited
by the sweep subprocesses the tests start."""

import os
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
os.environ["XLSTM_SUITE_ARTIFACTS"] = str(FIXTURES)
os.environ["XLSTM_SUITE_COMPOSE_CACHE"] = "off"
