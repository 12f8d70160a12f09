"""A local sweep's training workers use CUDA: they fork from a forkserver that imported torch and Lightning
(experiments.sweeps.local_launcher), which is sound only if that import touched no CUDA state (a process forked after
CUDA's initialisation cannot use it: torch raises "Cannot re-initialize CUDA in forked subprocess")."""

import os
import subprocess
import sys

import pytest

from experiments.paths import REPOSITORY_ROOT

pytestmark = pytest.mark.gpu


def test_a_local_sweep_trains_two_runs_at_once_on_cuda(tmp_path):
    command = [
        *(sys.executable, "-m", "experiments.cli", "sweep", "sweep-fixture", "--scale", "smoke", "--jobs", "2"),
        *("--where", "model=xlstm_0_1", "trainer.accelerator=gpu", "--root", str(tmp_path)),
    ]
    environment = os.environ | {"XLSTM_SUITE_ARTIFACTS": str(REPOSITORY_ROOT / "tests" / "fixtures")}
    finished = subprocess.run(
        command, cwd=REPOSITORY_ROOT, env=environment, capture_output=True, text=True, timeout=600
    )
    output = finished.stdout + finished.stderr
    assert finished.returncode == 0 and "done now: 2" in output, output[-4000:]
    assert len(list(tmp_path.rglob("result.json"))) == 2
