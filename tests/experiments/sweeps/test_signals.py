"""Stop signals end every command in a named state, with real processes: SIGTERM or SIGINT to a sweep (its parent
alone, or its whole process group) stops its workers, whose runs record the signal in error.json, release their
claims and resume on the next sweep; the sweep says so in one line and exits 128 + N. A worker stopped alone records
the signal, its sweep goes on. `train` stopped records the signal, exits 128 + N, never 0, and resumes."""

import json
import os
import signal
import subprocess
import sys
import time
from contextlib import suppress
from pathlib import Path

import pytest

from experiments.paths import REPOSITORY_ROOT
from experiments.sweeps.claims import CLAIM_FILE, process_is_running
from tests.experiments.sweeps.test_sweep import NO_TORCH, is_done, run_dirs, wait_until
from tests.processes import running
from tests.sweep_fakes import EXECUTIONS, HELD_RUN, HOLD, count_lines

# two runs of the fixture's grid (xlstm_0_1 on parity and on even_pairs), both in flight at once
SWEEP = ["sweep", "sweep-fixture", "--scale", "smoke", "--jobs", "2", "--where", "model=xlstm_0_1", NO_TORCH]


def start(arguments: list[str], **environment: str) -> subprocess.Popen:
    """The command line in a process group of its own (as a shell starts a job), its output piped."""
    return subprocess.Popen(
        [sys.executable, "-m", "experiments.cli", *arguments],
        cwd=REPOSITORY_ROOT,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=os.environ | environment,
    )


def finish(process: subprocess.Popen, timeout: float = 120) -> str:
    try:
        return process.communicate(timeout=timeout)[0]
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def worker_pids(root: Path) -> list[int]:
    return [
        int(line)
        for run_dir in run_dirs(root)
        if (run_dir / EXECUTIONS).exists()
        for line in (run_dir / EXECUTIONS).read_text().split()
    ]


def error_message(run_dir: Path) -> str:
    return json.loads((run_dir / "error.json").read_text())["message"]


def in_flight(root: Path) -> list[Path]:
    return [run_dir for run_dir in run_dirs(root) if count_lines(run_dir / EXECUTIONS) and not is_done(run_dir)]


@pytest.mark.parametrize(
    "signum, to",
    [
        (signal.SIGTERM, "parent"),  # timeout, systemd, a container stop, SLURM's end of job
        pytest.param(signal.SIGINT, "group", marks=pytest.mark.slow),  # Ctrl-C at a terminal
        pytest.param(signal.SIGINT, "parent", marks=pytest.mark.slow),
        pytest.param(signal.SIGTERM, "group", marks=pytest.mark.slow),
    ],
    ids=["SIGTERM to the sweep", "SIGINT to its group", "SIGINT to the sweep", "SIGTERM to its group"],
)
def test_a_stopped_sweep_stops_its_workers_records_the_signal_and_continues_on_the_next(tmp_path, signum, to):
    (tmp_path / HOLD).touch()
    sweep = start([*SWEEP, "--run-function", HELD_RUN, "--root", str(tmp_path)])
    wait_until(lambda: len(in_flight(tmp_path)) == 2, timeout_seconds=120)
    interrupted = in_flight(tmp_path)
    if to == "parent":
        os.kill(sweep.pid, signum)
    else:
        os.killpg(sweep.pid, signum)
    output = finish(sweep)
    name = signal.Signals(signum).name
    assert sweep.returncode == 128 + signum, output
    assert "Traceback" not in output and "stopped by " + name in output
    assert not any(process_is_running(pid) for pid in worker_pids(tmp_path))  # no orphan trains on
    assert list(tmp_path.rglob(CLAIM_FILE)) == [] and not any(is_done(run_dir) for run_dir in interrupted)
    assert [error_message(run_dir) for run_dir in interrupted] == [f"stopped by {name}"] * 2

    (tmp_path / HOLD).unlink()
    again = start([*SWEEP, "--run-function", HELD_RUN, "--root", str(tmp_path)])
    output = finish(again)
    assert again.returncode == 0 and "waiting for" not in output, output
    assert run_dirs(tmp_path) == interrupted and all(is_done(run_dir) for run_dir in interrupted)
    assert [count_lines(run_dir / EXECUTIONS) for run_dir in interrupted] == [2, 2]  # each resumed once


@pytest.mark.slow  # a sweep of its own; the default suite stops a whole sweep
def test_a_worker_stopped_alone_records_the_signal_and_the_sweep_goes_on(tmp_path):
    (tmp_path / HOLD).touch()
    sweep = start([*SWEEP, "--run-function", HELD_RUN, "--root", str(tmp_path)])
    wait_until(lambda: len(in_flight(tmp_path)) == 2, timeout_seconds=120)
    [stopped, _] = in_flight(tmp_path)
    os.kill(worker_pids(tmp_path)[run_dirs(tmp_path).index(stopped)], signal.SIGTERM)
    wait_until(lambda: (stopped / "error.json").exists())
    (tmp_path / HOLD).unlink()
    output = finish(sweep)
    assert sweep.returncode == 1 and "Traceback" not in output, output
    assert error_message(stopped) == "stopped by SIGTERM" and not (stopped / CLAIM_FILE).exists()
    assert [is_done(run_dir) for run_dir in run_dirs(tmp_path)].count(True) == 1 and "failed: 1" in output


TINY_TRAIN = [
    "train",
    "model=xlstm_1_0",
    "task=parity",
    "model.embedding_dim=16",
    "model.num_blocks=1",
    "trainer.batch_size=4",
    "trainer.num_threads=1",
    "trainer.max_steps=100000",
    "trainer.val_every_steps=100000",
    "+trainer.checkpoint_every_steps=1",
    "task.val_samples=8",
    "task.test_samples=8",
]


def last_step(root: Path) -> int | None:
    import torch

    try:
        [last] = root.glob("adhoc/adhoc/*/checkpoints/last.ckpt")
        return torch.load(last, weights_only=False)["global_step"]
    except (ValueError, OSError, RuntimeError, EOFError):  # none yet, or not yet (re)written
        return None


@pytest.mark.slow  # imports Lightning twice (about 15 s each on a busy machine)
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stopped_train_command_records_the_signal_exits_128_plus_n_and_resumes(tmp_path, signum):
    train = start([*TINY_TRAIN, "--root", str(tmp_path)])
    wait_until(lambda: (last_step(tmp_path) or 0) >= 2 or train.poll() is not None, timeout_seconds=300)
    os.kill(train.pid, signum)
    output = finish(train)
    name = signal.Signals(signum).name
    assert train.returncode == 128 + signum, output
    assert f"stopped by {name}: the same command resumes" in " ".join(output.split()) and "Traceback" not in output
    [run_dir] = tmp_path.glob("adhoc/adhoc/*")
    assert error_message(run_dir) == f"stopped by {name}" and not (run_dir / CLAIM_FILE).exists()
    assert not (run_dir / "result.json").exists()
    step = last_step(tmp_path)
    from experiments.training.train import FAIL_AFTER_STEPS_VARIABLE  # imports Lightning: only in this slow test

    again = start([*TINY_TRAIN, "--root", str(tmp_path)], **{FAIL_AFTER_STEPS_VARIABLE: str(step + 1)})
    output = finish(again, timeout=300)
    assert f"resuming {run_dir} from step {step} (last.ckpt)" in " ".join(output.split()), output


@pytest.mark.slow  # a worker that imports Lightning and trains
def test_a_training_worker_stopped_by_sigterm_records_the_signal_not_exit_code_0(tmp_path):
    sweep = start(
        [
            "sweep",
            "sweep-fixture",
            "--scale",
            "smoke",
            "--jobs",
            "1",
            "--where",
            "model=xlstm_1_0",
            "--where",
            "task=parity",
            *UNTIL_STOPPED,
            "--root",
            str(tmp_path),
        ]
    )
    wait_until(lambda: list(tmp_path.rglob("last.ckpt")) or sweep.poll() is not None, timeout_seconds=300)
    [run_dir] = run_dirs(tmp_path)
    worker = json.loads((run_dir / CLAIM_FILE).read_text())["pid"]
    os.kill(worker, signal.SIGTERM)
    output = finish(sweep)
    assert sweep.returncode == 1 and error_message(run_dir) == "stopped by SIGTERM", output
    assert not (run_dir / CLAIM_FILE).exists()


# a training run that goes on until it is stopped, with a checkpoint at every step
UNTIL_STOPPED = [
    "trainer.max_steps=100000",
    "trainer.val_every_steps=100000",
    "+trainer.checkpoint_every_steps=1",
    "trainer.num_threads=1",
]


def children(pid: int) -> list[int]:
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def command_line(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")


@pytest.mark.slow  # two workers that import Lightning and train
def test_training_workers_stopped_with_their_group_record_the_signal_though_their_forkserver_got_it_too(tmp_path):
    """Training workers fork from a forkserver (experiments.sweeps.local_launcher), whose exit statuses reach the sweep:
    the server ignores SIGTERM and survives one (here alone, then to the whole group), so each worker still reads as
    running until it has recorded its stop (with the server killed, it would read as exited with code 255)."""
    sweep = start([*SWEEP[:-1], *UNTIL_STOPPED, "--root", str(tmp_path)])
    try:
        wait_until(lambda: len(list(tmp_path.rglob("last.ckpt"))) == 2 or sweep.poll() is not None, timeout_seconds=300)
        [server] = [pid for pid in children(sweep.pid) if "forkserver" in command_line(pid)]
        os.kill(server, signal.SIGTERM)
        time.sleep(1)
        assert running(server)
        os.killpg(sweep.pid, signal.SIGTERM)
        output = finish(sweep)
    finally:
        with suppress(ProcessLookupError):  # no process of the sweep trains on, whatever failed
            os.killpg(sweep.pid, signal.SIGKILL)
    assert sweep.returncode == 128 + signal.SIGTERM and "Traceback" not in output, output
    assert [error_message(run_dir) for run_dir in run_dirs(tmp_path)] == ["stopped by SIGTERM"] * 2
    assert list(tmp_path.rglob(CLAIM_FILE)) == []


@pytest.mark.slow  # a forkserver that imports Lightning
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_sweep_stopped_while_its_forkserver_imports_training_stops_at_once(tmp_path, signum):
    """A Ctrl-C to the group in the seconds the forkserver imports training ended the server with a KeyboardInterrupt
    and the sweep with an EOFError traceback; held while the first worker started, it went unnoticed for those
    seconds. Now the server ignores it, and the sweep stops at once."""
    sweep = start([*SWEEP[:-1], *UNTIL_STOPPED, "--root", str(tmp_path)])
    try:
        wait_until(lambda: any("forkserver" in command_line(pid) for pid in children(sweep.pid)), timeout_seconds=60)
        os.killpg(sweep.pid, signum)
        stopped = time.monotonic()
        sweep.wait(timeout=30)
        assert time.monotonic() - stopped < 5  # the server's imports take 8-11 s here
        output = finish(sweep)
    finally:
        with suppress(ProcessLookupError):
            os.killpg(sweep.pid, signal.SIGKILL)
    assert sweep.returncode == 128 + signum and "Traceback" not in output, output
    assert f"stopped by {signal.Signals(signum).name}" in output and run_dirs(tmp_path) == []
