"""Faults of the run store cost at most the run they hit: a file in the way of a run directory, a read-only or
full filesystem, a claim naming a live process that is not its holder."""

import json
import os
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from experiments.paths import REPOSITORY_ROOT
from experiments.sweeps.claims import CLAIM_FILE, process_start_ticks
from tests.experiments.sweeps.test_sweep import NO_TORCH, is_done, run_dirs, sweep_command_line
from tests.sweep_fakes import EXECUTIONS, RECORD_RUN, count_lines

FIXTURE_RUNS = 6  # sweep-fixture's smoke grid, which the command line sweeps


def sweep(root: Path, *arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        sweep_command_line(root, "--jobs", "2", *arguments),
        cwd=REPOSITORY_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def command(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "experiments.cli", *arguments],
        cwd=REPOSITORY_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


@contextmanager
def tmpfs(mount_point: Path, options: str):
    mount_point.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mount_point)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.decode().strip()}); needs root")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "--lazy", str(mount_point)], check=True)


def temporary_files(root: Path) -> list[Path]:
    return [path for path in root.rglob(".*") if path.is_file() and not path.name.startswith(".claim.json.taken")]


@pytest.mark.slow  # minutes of the default suite's 10 (make test-slow)
def test_a_file_in_the_way_of_a_run_directory_fails_that_run_only_and_readers_name_it(tmp_path):
    # no overrides (list plans the artifact as it is)
    plain_sweep = ["sweep", "sweep-fixture", "--scale", "smoke", "--run-function", RECORD_RUN, "--root", str(tmp_path)]
    planned = command(*plain_sweep, "--dry-run", "--verbose").stdout
    run_ids = [line.split()[4] for line in planned.splitlines() if line.startswith("xlstm_")]
    blocked = tmp_path / "smoke" / "sweep-fixture" / run_ids[1]
    blocked.parent.mkdir(parents=True)
    blocked.write_text("not a directory")
    finished = command(*plain_sweep)
    assert finished.returncode == 1 and "Traceback" not in finished.stdout + finished.stderr
    assert "failed: 1" in finished.stdout and f"[Errno 17] File exists: '{blocked}'" in " ".join(
        finished.stdout.split()
    )
    assert sum(is_done(path) for path in run_dirs(tmp_path)) == FIXTURE_RUNS - 1
    for reader in (
        ["list", "sweep-fixture", "--scale", "smoke"],
        ["sweep", "sweep-fixture", "--scale", "smoke", "--dry-run"],
        ["report", "sweep-fixture", "--scale", "smoke", "--destination", str(tmp_path / "reports")],
    ):
        read = command(*reader, "--root", str(tmp_path))
        assert read.returncode == 0 and "Traceback" not in read.stderr, read.stdout + read.stderr
        assert f"warning: {blocked} is a file where a run directory should be" in read.stderr
    listed = command("list", "sweep-fixture", "--scale", "smoke", "--root", str(tmp_path)).stdout
    assert f"damaged: {blocked}" in "".join(listed.split("\n"))


def test_a_read_only_run_store_stops_the_sweep_in_one_line(tmp_path):
    with tmpfs(tmp_path / "store", "size=1m,ro") as store:
        finished = sweep(store / "runs", NO_TORCH)
    assert finished.returncode == 1
    assert finished.stderr.strip() == (
        f"xlstm-suite sweep: error: the run store {store / 'runs'} cannot be written: "
        f"[Errno 30] Read-only file system: '{store / 'runs'}'"
    )


@pytest.mark.slow  # minutes of the default suite's 10 (make test-slow)
def test_a_full_disk_stops_the_sweep_cleanly_and_leaves_no_temporary_file(tmp_path):
    with tmpfs(tmp_path / "store", "size=48k") as store:
        root = store / "runs"
        full = sweep(root, NO_TORCH)
        assert full.returncode == 1 and "Traceback" not in full.stdout + full.stderr, full.stdout + full.stderr
        output = " ".join(full.stdout.split())
        assert "stopped: the run store cannot be written ([Errno 28] No space left on device" in output
        assert "runs not started" in output
        assert temporary_files(root) == []
        subprocess.run(["mount", "-o", "remount,size=4m", str(store)], check=True)
        again = sweep(root, NO_TORCH)
        assert again.returncode == 0, again.stdout + again.stderr
        assert sum(is_done(path) for path in run_dirs(root)) == FIXTURE_RUNS
        assert temporary_files(root) == []


def test_a_claim_naming_a_live_process_that_did_not_write_it_is_taken_over_at_once(tmp_path):
    first = sweep(tmp_path, "--dry-run", "--verbose", NO_TORCH)
    run_ids = [line.split()[4] for line in first.stdout.splitlines() if line.startswith("xlstm_")]
    run_dir = tmp_path / "smoke" / "sweep-fixture" / run_ids[0]
    run_dir.mkdir(parents=True)
    # a live process that started at another time than the claim says: a reused pid or a copied claim (not the
    # test's parent: a shell that forks and execs pytest within one clock tick shares its start time)
    with subprocess.Popen(["sleep", "600"]) as unrelated:
        holder = {
            "hostname": socket.gethostname(),
            "pid": unrelated.pid,
            "token": "copied",
            "process_start_ticks": process_start_ticks(unrelated.pid) - 1,
        }
        (run_dir / CLAIM_FILE).write_text(json.dumps(holder))
        finished = sweep(tmp_path, NO_TORCH)
        unrelated.kill()
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert all(is_done(path) for path in run_dirs(tmp_path)) and len(run_dirs(tmp_path)) == FIXTURE_RUNS
    assert count_lines(run_dir / EXECUTIONS) == 1


def test_a_sweep_waits_for_a_claim_held_elsewhere_and_runs_it_once_its_heartbeat_stops(tmp_path):
    first = sweep(tmp_path, "--dry-run", "--verbose", NO_TORCH)
    run_ids = [line.split()[4] for line in first.stdout.splitlines() if line.startswith("xlstm_")]
    run_dir = tmp_path / "smoke" / "sweep-fixture" / run_ids[0]
    run_dir.mkdir(parents=True)
    holder = {"hostname": "another-node", "pid": 4242, "token": "elsewhere"}  # a worker on another host
    claim = run_dir / CLAIM_FILE
    claim.write_text(json.dumps(holder))
    # the other worker's heartbeat beats until the sweep says it waits (however long planning takes on a loaded
    # machine), then stops: the sweep must take the run over once the claim is 3 s stale
    holder_stopped = threading.Event()

    def heartbeat() -> None:
        deadline = time.monotonic() + 120
        while not holder_stopped.wait(0.5) and time.monotonic() < deadline:
            os.utime(claim)

    beating = threading.Thread(target=heartbeat, daemon=True)
    beating.start()
    process = subprocess.Popen(
        sweep_command_line(tmp_path, "--jobs", "2", NO_TORCH, "--claim-timeout", "3"),
        cwd=REPOSITORY_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    output, stopped = [], None
    for line in process.stdout:
        output.append(line)
        if "waiting for" in line and not holder_stopped.is_set():
            holder_stopped.set()
            stopped = time.monotonic()
    holder_stopped.set()
    assert process.wait(timeout=300) == 0, "".join(output)
    assert stopped is not None, "".join(output)
    assert time.monotonic() - stopped > 3  # it waited for the heartbeat to go stale
    assert "waiting for 1 runs that other workers hold (claimed by another-node pid 4242)" in " ".join(
        "".join(output).split()
    )
    assert all(is_done(path) for path in run_dirs(tmp_path)) and count_lines(run_dir / EXECUTIONS) == 1
