"""The training workers' memory allocator: XLSTM_SUITE_ALLOCATOR's choices, the forkserver's variables, a clear
error for a bad choice before any run, and a forked worker that has tcmalloc mapped."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.sweeps import worker_allocator
from experiments.sweeps.worker_allocator import ALLOCATOR_VARIABLE, chosen_allocator, worker_environment

REPOSITORY = Path(__file__).resolve().parents[3]
TCMALLOC = worker_allocator.tcmalloc_library()


def test_tcmalloc_is_the_default_and_system_can_be_chosen(monkeypatch):
    monkeypatch.delenv(ALLOCATOR_VARIABLE, raising=False)
    assert chosen_allocator() == "tcmalloc"
    monkeypatch.setenv(ALLOCATOR_VARIABLE, "system")
    assert chosen_allocator() == "system"


def test_an_unknown_allocator_is_refused_with_the_valid_choices(monkeypatch):
    monkeypatch.setenv(ALLOCATOR_VARIABLE, "jemalloc")
    with pytest.raises(ValueError, match=r"XLSTM_SUITE_ALLOCATOR='jemalloc'.*\['tcmalloc', 'system'\]"):
        chosen_allocator()


def test_the_system_allocator_sets_nothing():
    assert worker_environment("system") == ({}, None)


def test_tcmalloc_preloads_the_library_before_any_preload_already_set(monkeypatch):
    monkeypatch.setattr(worker_allocator, "tcmalloc_library", lambda: "libtcmalloc_minimal.so.4")
    monkeypatch.setenv("LD_PRELOAD", "libother.so")
    variables, note = worker_environment("tcmalloc")
    assert variables["LD_PRELOAD"] == "libtcmalloc_minimal.so.4 libother.so"
    assert int(variables["TCMALLOC_LARGE_ALLOC_REPORT_THRESHOLD"]) > 2**40  # no allocation report in a worker's log
    assert note is None


def test_a_missing_tcmalloc_falls_back_to_the_system_allocator_with_a_note_on_installing_it(monkeypatch):
    monkeypatch.setattr(worker_allocator, "tcmalloc_library", lambda: None)
    variables, note = worker_environment("tcmalloc")
    assert variables == {}
    assert "not installed" in note and "apt-get install libtcmalloc-minimal4" in note


def test_a_sweep_refuses_an_unknown_allocator_before_it_runs_anything(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv(ALLOCATOR_VARIABLE, "hoard")
    monkeypatch.setenv("XLSTM_SUITE_ARTIFACTS", str(REPOSITORY / "tests" / "fixtures"))
    from experiments.cli import main

    assert main(["sweep", "sweep-fixture", "--scale", "smoke", "--root", str(tmp_path / "runs")]) != 0
    assert "XLSTM_SUITE_ALLOCATOR='hoard'" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


@pytest.mark.skipif(TCMALLOC is None, reason="tcmalloc is not installed (apt-get install libtcmalloc-minimal4)")
def test_a_training_worker_forked_by_the_forkserver_has_tcmalloc_and_the_launcher_keeps_its_environment():
    """A fresh interpreter (its own forkserver, which imports training: about 10 s)."""
    script = (
        "import os, sys\n"
        "from experiments.sweeps.local_launcher import worker_context\n"
        "from experiments.sweeps.run_execution import DEFAULT_RUN_FUNCTION\n"
        "from tests.processes import exit_with_tcmalloc_mapped\n"
        "context = worker_context(DEFAULT_RUN_FUNCTION, 'tcmalloc')\n"
        "worker = context.Process(target=exit_with_tcmalloc_mapped)\n"
        "worker.start(); worker.join()\n"
        "print(worker.exitcode, os.environ.get('LD_PRELOAD'), 'tcmalloc' in open('/proc/self/maps').read())\n"
    )
    environment = {key: value for key, value in os.environ.items() if key != "LD_PRELOAD"}
    environment["PYTHONPATH"] = str(REPOSITORY)
    finished = subprocess.run(
        [sys.executable, "-c", script], cwd=REPOSITORY, env=environment, capture_output=True, text=True, timeout=120
    )
    assert finished.returncode == 0, finished.stderr
    # the worker has it; the launcher neither has it nor keeps the variable
    assert finished.stdout.split() == ["0", "None", "False"], finished.stdout + finished.stderr
