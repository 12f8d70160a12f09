"""Test-wide settings: the sweep runner's fixture artifact is found through XLSTM_SUITE_ARTIFACTS (inherited by
the sweep subprocesses the tests start)."""

import os
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
os.environ["XLSTM_SUITE_ARTIFACTS"] = str(FIXTURES)
