"""The training workers' memory allocator: XLSTM_SUITE_ALLOCATOR's choices, the forkserver's variables, a clear
error for a bad choice before any run, a forked worker that has tcmalloc mapped, and the train command that restarts
itself with it."""

import os
import subprocess
import sys
import time
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


def test_train_from_the_command_line_restarts_itself_with_tcmalloc_preloaded_once(monkeypatch):
    monkeypatch.delenv(ALLOCATOR_VARIABLE, raising=False)
    monkeypatch.setattr(worker_allocator, "tcmalloc_library", lambda: "libtcmalloc_minimal.so.4")
    monkeypatch.setenv("LD_PRELOAD", "libother.so")
    command, environment = worker_allocator.train_restart(["/bin/xlstm-suite", "train", "model=llama", "seed=1"])
    assert command == [sys.executable, "-m", "experiments.cli", "train", "model=llama", "seed=1"]
    assert environment["LD_PRELOAD"] == "libtcmalloc_minimal.so.4 libother.so"
    monkeypatch.setenv("LD_PRELOAD", environment["LD_PRELOAD"])
    assert worker_allocator.train_restart(["/bin/xlstm-suite", "train", "model=llama"]) is None  # preloaded: runs on
    monkeypatch.delenv("LD_PRELOAD")
    assert worker_allocator.train_restart(["/bin/xlstm-suite", "sweep", "formal-main"]) is None  # its workers have it
    monkeypatch.setenv(ALLOCATOR_VARIABLE, "system")
    assert worker_allocator.train_restart(["/bin/xlstm-suite", "train", "model=llama"]) is None
    monkeypatch.setenv(ALLOCATOR_VARIABLE, "hoard")
    with pytest.raises(ValueError, match="XLSTM_SUITE_ALLOCATOR='hoard'"):
        worker_allocator.train_restart(["/bin/xlstm-suite", "train", "model=llama"])


def allocator_of_train(allocator: str) -> tuple[bool, subprocess.CompletedProcess]:
    """Whether `train`'s process (its pid kept across the restart) had tcmalloc mapped at some moment, and how it
    ended; the train command fails at its config, after the restart, before any compute."""
    environment = {key: value for key, value in os.environ.items() if key != "LD_PRELOAD"}
    environment |= {"PYTHONPATH": str(REPOSITORY), ALLOCATOR_VARIABLE: allocator}
    command = [sys.executable, "-m", "experiments.cli", "train", "model=no_such_model"]
    with subprocess.Popen(command, cwd=REPOSITORY, env=environment, stderr=subprocess.PIPE, text=True) as train:
        mapped = False
        while train.poll() is None and not mapped:
            try:
                mapped = "tcmalloc" in Path(f"/proc/{train.pid}/maps").read_text()
            except OSError:  # ended between the poll and the read
                break
            time.sleep(0.01)
        stderr = train.communicate(timeout=120)[1]
    return mapped, subprocess.CompletedProcess(command, train.returncode, "", stderr)


@pytest.mark.skipif(TCMALLOC is None, reason="tcmalloc is not installed (apt-get install libtcmalloc-minimal4)")
def test_the_train_command_runs_with_tcmalloc_and_without_where_the_system_allocator_is_chosen():
    for allocator, expected in (("tcmalloc", True), ("system", False)):
        mapped, finished = allocator_of_train(allocator)
        assert mapped == expected, allocator
        assert finished.returncode == 2 and finished.stderr.count("unknown model 'no_such_model'") == 1, finished
