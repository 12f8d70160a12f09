"""Planning (grid expansion, run ids, bad input), the run store's files, claims, reading the store back
(frames and the list command)."""

import hashlib
import io
import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest
import torch
from omegaconf import OmegaConf
from rich.console import Console

from experiments import atomic
from experiments.config import artifacts
from experiments.config.artifacts import MODEL_NOT_REGISTERED, known_artifacts, load_artifact, run_id_of
from experiments.config.configuration import ConfigError, config_yaml
from experiments.run_metrics import PARAMETERS_METRIC
from experiments.sweeps.claims import CLAIM_FILE, holding, process_start_ticks, read_claim, release
from experiments.sweeps.manifest import Manifest, read_manifest, write_manifest
from experiments.sweeps.run_execution import execute_run
from experiments.sweeps.run_store import claim_run, run_directory, runs_frame, store_frame
from experiments.sweeps.status import list_artifacts
from experiments.sweeps.sweep import hydra_command, load_launcher, run_sweep
from tests.sweep_fakes import EXECUTIONS, RECORD_RUN, THREADS_RUN, UNBUILT_MODEL, count_lines, small_artifact

FIXTURE = load_artifact("sweep-fixture")
SMOKE_RUNS = FIXTURE.runs("smoke")


# --- planning -----------------------------------------------------------------------------------------------------


def test_artifacts_are_the_files_in_configs_paper():
    assert {"formal-main", "formal-appendix", "sweep-fixture"} <= set(known_artifacts())
    assert FIXTURE.title.startswith("Formal languages")
    assert FIXTURE.selection["metric"] == "val/scaled_accuracy"


def test_smoke_grid_expands_in_a_stable_order():
    cells = [(run.cell["model"], run.cell["task"]) for run in SMOKE_RUNS]
    assert cells == [
        ("xlstm_0_1", "parity"), ("xlstm_0_1", "even_pairs"),
        ("xlstm_1_0", "parity"), ("xlstm_1_0", "even_pairs"),
        ("xlstm_1_1", "parity"), ("xlstm_1_1", "even_pairs"),
    ]  # fmt: skip
    assert all(run.cell["optim.lr"] == 1.0e-3 and run.cell["seed"] == 0 for run in SMOKE_RUNS)
    assert [run.run_id for run in FIXTURE.runs("smoke")] == [run.run_id for run in SMOKE_RUNS]


def test_scale_grid_replaces_only_its_keys():
    mini = FIXTURE.grid_of("mini")
    assert mini["optim.lr"] == [1.0e-3] and mini["seed"] == [0]
    assert mini["model"] == FIXTURE.grid["model"] and mini["task"] == FIXTURE.grid["task"]
    assert list(mini) == list(FIXTURE.grid)
    assert FIXTURE.grid_of("paper") == FIXTURE.grid


def test_overrides_are_cell_then_model_then_artifact_then_scale_then_names_then_user():
    run = FIXTURE.runs("smoke", ["+debug.sleep_seconds=0"])[0]
    assert run.overrides == [
        "model=xlstm_0_1", "task=parity", "optim.lr=0.001", "seed=0",
        *FIXTURE.cell_overrides["model"]["xlstm_0_1"], *FIXTURE.overrides, *FIXTURE.scales["smoke"]["overrides"],
        "artifact=sweep-fixture", "scale=smoke", "+debug.sleep_seconds=0",
    ]  # fmt: skip
    assert run.config.trainer.max_steps == 10 and run.config.model.num_blocks == 2
    assert run.config.artifact == "sweep-fixture" and run.config.scale == "smoke"


def test_run_id_hashes_the_resolved_config():
    run = SMOKE_RUNS[0]
    assert run.run_id == hashlib.sha256(config_yaml(run.config).encode()).hexdigest()[:12]
    assert len({run.run_id for run in SMOKE_RUNS}) == len(SMOKE_RUNS)
    changed = FIXTURE.runs("smoke", ["trainer.max_steps=11"])
    assert not {run.run_id for run in changed} & {run.run_id for run in SMOKE_RUNS}
    assert run_id_of(OmegaConf.create({"a": 1, "b": {"c": 2, "d": 3}})) == run_id_of(
        OmegaConf.create({"b": {"d": 3, "c": 2}, "a": 1})
    )


def test_models_without_config_or_registry_entry_are_planned_as_unavailable(monkeypatch):
    unbuilt, xlstm = small_artifact([UNBUILT_MODEL, "xlstm_1_0"]).runs("smoke")
    assert unbuilt.unavailable == MODEL_NOT_REGISTERED and unbuilt.config is None and unbuilt.run_id is None
    assert xlstm.unavailable is None and xlstm.run_id is not None
    monkeypatch.setattr(artifacts, "model_is_registered", lambda model: model != "xlstm_1_0")  # a config, no backbone
    assert small_artifact(["xlstm_1_0"]).runs("smoke")[0].unavailable == MODEL_NOT_REGISTERED


@pytest.mark.parametrize(
    "name, scale, overrides, error, message",
    [
        ("formal-nope", "smoke", [], ValueError, "unknown artifact 'formal-nope'; valid choices: ["),
        ("sweep-fixture", "huge", [], ValueError, "unknown scale 'huge'; valid choices: ['smoke', 'mini', 'paper']"),
        ("sweep-fixture", "smoke", ["model=nope"], ConfigError, "unknown model 'nope'; valid choices: ["),
        ("sweep-fixture", "smoke", ["task=nope"], ConfigError, "unknown task 'nope'; valid choices: ["),
        ("sweep-fixture", "smoke", ["trainer.max_steps"], ConfigError, "malformed override 'trainer.max_steps'"),
        ("sweep-fixture", "smoke", ["trainer.no_such_key=1"], ConfigError, "trainer.no_such_key"),
    ],
)
def test_bad_input_names_the_value_and_choices(name, scale, overrides, error, message):
    with pytest.raises(error, match=message.replace("[", r"\[").replace("(", r"\(")):
        load_artifact(name).runs(scale, overrides)


def test_pinning_a_grid_key_that_makes_cells_identical_is_refused():
    with pytest.raises(ConfigError, match="the same run"):
        small_artifact(["xlstm_1_0"], seeds=[0, 1]).runs("smoke", ["seed=5"])


# --- one run in the store -----------------------------------------------------------------------------------------


def test_successful_run_writes_inputs_and_result(tmp_path):
    run = SMOKE_RUNS[0]
    outcome = execute_run(run, tmp_path, RECORD_RUN)
    run_dir = tmp_path / "smoke" / "sweep-fixture" / run.run_id
    assert outcome.status == "done" and outcome.run_dir == run_dir
    assert OmegaConf.load(run_dir / "config.yaml") == run.config
    assert json.loads((run_dir / "cell.json").read_text())["cell"] == run.cell
    result = json.loads((run_dir / "result.json").read_text())
    assert result["metrics"] == {
        "val/scaled_accuracy": 0.5,
        "test/scaled_accuracy": 0.25,
        PARAMETERS_METRIC: 1000.0 * run.config.model.embedding_dim,
    }
    assert result["run_id"] == run.run_id and result["cell"] == run.cell and result["hostname"] == socket.gethostname()
    assert result["duration_seconds"] >= 0 and result["started"] <= result["finished"]
    assert (run_dir / "metrics.csv").exists()
    assert not (run_dir / "error.json").exists() and not (run_dir / CLAIM_FILE).exists()
    assert [path.name for path in run_dir.iterdir() if path.name.startswith(".")] == []


def test_failed_run_writes_error_and_no_result(tmp_path):
    run = small_artifact(["xlstm_1_0"]).runs("smoke", ["+debug.fail_model=xlstm_1_0"])[0]
    outcome = execute_run(run, tmp_path, RECORD_RUN)
    run_dir = run_directory(run, tmp_path)
    assert outcome.status == "failed" and "injected failure of model xlstm_1_0" in outcome.detail
    error = json.loads((run_dir / "error.json").read_text())
    assert error["exception_type"] == "RuntimeError" and "injected failure" in error["message"]
    assert "Traceback (most recent call last)" in error["traceback"] and "record_run" in error["traceback"]
    assert not (run_dir / "result.json").exists() and not (run_dir / CLAIM_FILE).exists()


def test_success_after_failure_removes_the_stale_error(tmp_path):
    run = SMOKE_RUNS[0]
    run_dir = run_directory(run, tmp_path)
    run_dir.mkdir(parents=True)
    (run_dir / "error.json").write_text("{}")
    assert execute_run(run, tmp_path, RECORD_RUN).status == "done"
    assert (run_dir / "result.json").exists() and not (run_dir / "error.json").exists()


def test_a_failure_while_writing_the_result_leaves_no_result(tmp_path, monkeypatch):
    real_replace = os.replace

    def replace_failing_for_results(source, destination):
        if str(destination).endswith("result.json"):
            raise OSError("disk full")
        real_replace(source, destination)

    monkeypatch.setattr(atomic.os, "replace", replace_failing_for_results)
    run = SMOKE_RUNS[0]
    outcome = execute_run(run, tmp_path, RECORD_RUN)
    run_dir = run_directory(run, tmp_path)
    assert outcome.status == "failed" and "disk full" in outcome.detail
    assert not (run_dir / "result.json").exists()
    assert json.loads((run_dir / "error.json").read_text())["message"] == "disk full"


def test_done_run_is_neither_claimed_nor_run_again(tmp_path):
    run = SMOKE_RUNS[0]
    execute_run(run, tmp_path, RECORD_RUN)
    assert execute_run(run, tmp_path, RECORD_RUN).status == "already done"
    run_dir = run_directory(run, tmp_path)
    assert count_lines(run_dir / EXECUTIONS) == 1
    assert claim_run(run_dir) is None


def test_run_claimed_by_a_live_worker_is_skipped(tmp_path):
    run = SMOKE_RUNS[0]
    run_dir = run_directory(run, tmp_path)
    claim = claim_run(run_dir)
    outcome = execute_run(run, tmp_path, RECORD_RUN)
    assert outcome.status == "claimed" and f"pid {os.getpid()}" in outcome.detail
    assert count_lines(run_dir / EXECUTIONS) == 0
    release(claim)


def test_worker_sets_torch_threads_from_the_config(tmp_path):
    threads_before = torch.get_num_threads()
    try:
        run = FIXTURE.runs("smoke", ["trainer.num_threads=1"])[0]
        execute_run(run, tmp_path, THREADS_RUN)
    finally:
        torch.set_num_threads(threads_before)
    assert json.loads((run_directory(run, tmp_path) / "result.json").read_text())["metrics"] == {"threads": 1.0}


def test_a_spawned_worker_runs_with_the_configs_threads_though_it_imports_torch_only_in_the_run(tmp_path):
    artifact = small_artifact(["xlstm_0_1"])
    overrides = ["trainer.num_threads=1"]  # torch's default is the number of cores (2 here)
    assert run_sweep(artifact, "smoke", jobs=1, overrides=overrides, root=tmp_path, run_function=THREADS_RUN) == 0
    (run,) = artifact.runs("smoke", overrides)
    assert json.loads((run_directory(run, tmp_path) / "result.json").read_text())["metrics"] == {"threads": 1.0}


# --- claims -------------------------------------------------------------------------------------------------------


def write_claim(run_dir, hostname, pid, age_seconds, text=None, **holder_fields):
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / CLAIM_FILE
    holder = {"hostname": hostname, "pid": pid, "token": "old", "started": "then", **holder_fields}
    path.write_text(json.dumps(holder) if text is None else text)
    os.utime(path, (time.time() - age_seconds, time.time() - age_seconds))


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


@pytest.mark.parametrize(
    "hostname, pid, age_seconds, text, taken",
    [
        (socket.gethostname(), os.getpid(), 0, None, False),  # live worker on this host
        ("elsewhere", 1, 0, None, False),  # another host, fresh heartbeat
        ("elsewhere", 1, 120, None, True),  # another host, heartbeat older than the timeout
        (socket.gethostname(), dead_pid(), 0, None, True),  # its process is dead
        (socket.gethostname(), os.getpid(), 0, "", False),  # unreadable, fresh
        (socket.gethostname(), os.getpid(), 120, "", True),  # unreadable, old
        # a live pid of this host: the claim's process only if the start time matches (else a reused pid or a copy)
        (socket.gethostname(), os.getpid(), 0, {"process_start_ticks": process_start_ticks(os.getpid())}, False),
        # (a start time other than the live process's own: the parent may have started in this process's clock tick)
        (socket.gethostname(), os.getppid(), 0, {"process_start_ticks": process_start_ticks(os.getppid()) + 1}, True),
        (socket.gethostname(), os.getppid(), 0, None, False),  # no start time (not written by the suite): heartbeat
    ],
    # ids without the pids: pytest-xdist's workers collect them each in its own process
    ids=[
        "live",
        "elsewhere-fresh",
        "elsewhere-old",
        "dead",
        "unreadable-fresh",
        "unreadable-old",
        "live-same-start",
        "reused-pid",
        "no-start-time",
    ],
)
def test_only_stale_claims_are_taken_over(tmp_path, hostname, pid, age_seconds, text, taken):
    fields = text if isinstance(text, dict) else {}
    write_claim(tmp_path, hostname, pid, age_seconds, None if isinstance(text, dict) else text, **fields)
    claim = claim_run(tmp_path, stale_after_seconds=60)
    assert (claim is not None) == taken
    if taken:
        assert read_claim(tmp_path / CLAIM_FILE).token == claim.token
        release(claim)
        assert list(tmp_path.iterdir()) == []  # no drafts, moved claims or takeover markers left


OWN_TICKS = process_start_ticks(os.getpid())


@pytest.mark.parametrize(
    "kind, hostname, pid, ticks, stale_after_seconds, removed",
    [
        ("draft", socket.gethostname(), dead_pid(), OWN_TICKS, 60, True),  # its writer was killed while writing
        ("stale", socket.gethostname(), dead_pid(), OWN_TICKS, 60, True),  # ... while taking over a stale claim
        ("draft", socket.gethostname(), os.getpid(), OWN_TICKS + 1, 60, True),  # the pid now names another process
        ("draft", socket.gethostname(), os.getpid(), OWN_TICKS, 60, False),  # its writer is alive
        ("draft", socket.gethostname(), os.getpid(), "None", 60, False),  # alive, without /proc when it was written
        ("draft", "elsewhere", 1, 5, 60, False),  # another host: young, its writer may be writing
        ("draft", "elsewhere", 1, 5, 0, True),  # another host: older than the timeout
        ("taken", socket.gethostname(), dead_pid(), OWN_TICKS, 60, False),  # not a private file of this scheme
        # the draft of a takeover marker (``.claim.json.taken-<token>``), its writer killed
        ("draft-of-marker", socket.gethostname(), dead_pid(), OWN_TICKS, 60, True),
    ],
    ids=[
        "draft-dead",
        "stale-dead",
        "draft-reused-pid",
        "draft-alive",
        "draft-alive-no-proc",
        "elsewhere-young",
        "elsewhere-old",
        "taken-marker",
        "marker-draft-dead",
    ],
)
def test_claiming_removes_the_private_files_of_writers_that_are_gone(
    tmp_path, kind, hostname, pid, ticks, stale_after_seconds, removed
):
    writer = f"{pid}-{ticks}-{'0123abcd' * 4}-{hostname}"
    name = f"..{CLAIM_FILE}.taken-old.draft-{writer}" if kind == "draft-of-marker" else f".{CLAIM_FILE}.{kind}-{writer}"
    private = tmp_path / name
    private.write_text("")  # a draft is empty when its writer dies before writing
    claim = claim_run(tmp_path, stale_after_seconds=stale_after_seconds)
    assert claim is not None and private.exists() != removed
    release(claim)


def test_of_concurrent_takers_of_a_stale_claim_exactly_one_wins(tmp_path):
    takers = 4
    for round_number in range(25):
        run_dir = tmp_path / str(round_number)
        write_claim(run_dir, "elsewhere", 1, age_seconds=120)
        start = threading.Barrier(takers)
        claims = []

        def take(start=start, claims=claims, run_dir=run_dir):  # this round's, bound now
            start.wait()
            claims.append(claim_run(run_dir, stale_after_seconds=60))

        threads = [threading.Thread(target=take) for _ in range(takers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        winners = [claim for claim in claims if claim is not None]
        assert len(winners) == 1
        assert read_claim(run_dir / CLAIM_FILE).token == winners[0].token
        release(winners[0])
        assert list(run_dir.iterdir()) == []


def test_heartbeat_keeps_a_claim_live_beyond_the_timeout(tmp_path):
    claim = claim_run(tmp_path, stale_after_seconds=1.0)
    os.utime(claim.path, (time.time() - 10, time.time() - 10))  # as if it had not beaten for a while
    with holding(claim, heartbeat_seconds=0.05):
        deadline = time.time() + 30
        while read_claim(claim.path).age_seconds > 1.0 and time.time() < deadline:
            time.sleep(0.05)
        assert read_claim(claim.path).age_seconds <= 1.0
    assert not claim.path.exists()


def test_release_leaves_a_claim_that_was_taken_over(tmp_path):
    first = claim_run(tmp_path)
    os.utime(first.path, (time.time() - 120, time.time() - 120))
    second = claim_run(tmp_path, stale_after_seconds=60)
    assert second is not None
    release(first)
    assert read_claim(second.path).token == second.token


# --- reading the store back ---------------------------------------------------------------------------------------


def test_store_reads_back_as_a_frame(tmp_path):
    runs = small_artifact([UNBUILT_MODEL, "xlstm_0_1", "xlstm_1_0"]).runs("smoke", ["+debug.fail_model=xlstm_1_0"])
    for run in runs[1:]:
        execute_run(run, tmp_path, RECORD_RUN)
    planned = runs_frame(runs, tmp_path)
    assert list(planned["status"]) == ["unavailable", "done", "failed"]
    assert list(planned["model"]) == [UNBUILT_MODEL, "xlstm_0_1", "xlstm_1_0"]
    assert planned.loc[0, "reason"] == MODEL_NOT_REGISTERED
    assert planned.loc[1, "test/scaled_accuracy"] == 0.25 and planned.loc[1, "optim.lr"] == 1.0e-3
    assert "injected failure" in planned.loc[2, "error"]
    stored = store_frame(tmp_path, scale="smoke", artifact="sweep-fixture")
    assert sorted(stored["run_id"]) == sorted(run.run_id for run in runs[1:])
    assert set(stored["status"]) == {"done", "failed"}
    assert store_frame(tmp_path / "empty").empty


def listed(console: Console) -> tuple[list[str], list[list[str]]]:
    """The header and the rows (artifact name carried down to its later scales) of a printed list."""
    lines = console.file.getvalue().splitlines()
    header_at = next(index for index, line in enumerate(lines) if line.split()[:2] == ["artifact", "scale"])
    rows, name = [], None
    for line in lines[header_at + 1 :]:
        words = line.split()
        if not words or line.startswith("─") or not any(scale in words for scale in artifacts.SCALES):
            continue
        name = words[0] if words[0] not in artifacts.SCALES else name
        rows.append([name, *(words[1:] if words[0] not in artifacts.SCALES else words)])
    return lines[header_at].split(), rows


def test_list_counts_runs_per_artifact_and_scale(tmp_path):
    for run in SMOKE_RUNS[:3]:
        execute_run(run, tmp_path, RECORD_RUN)
    failed_dir, running_dir = run_directory(SMOKE_RUNS[3], tmp_path), run_directory(SMOKE_RUNS[4], tmp_path)
    failed_dir.mkdir(parents=True)
    (failed_dir / "error.json").write_text(json.dumps({"exception_type": "RuntimeError", "message": "boom"}))
    claim = claim_run(running_dir)
    console = Console(file=io.StringIO(), width=200)
    console.print(list_artifacts(tmp_path, ["sweep-fixture"], ["smoke"]))
    release(claim)
    header, (row,) = listed(console)
    assert dict(zip(header, row)) == {
        "artifact": "sweep-fixture",
        "scale": "smoke",
        "runs": "6",
        "done": "3",
        "failed": "1",
        "running": "1",
        "missing": "3",
    }  # fmt: skip (columns of zeros are left out)


def test_list_fits_an_80_column_terminal_and_never_wraps_an_artifact_name(tmp_path, monkeypatch):
    long_name = "inference_time_decoding_throughput"  # the paper's longest artifact name
    fixture = artifacts.artifact_files()["sweep-fixture"]
    (tmp_path / f"{long_name}-x.yaml").write_text(
        fixture.read_text().replace("artifact: sweep-fixture", f"artifact: {long_name}-x")
    )
    monkeypatch.setenv(
        artifacts.EXTRA_ARTIFACTS_VARIABLE,
        os.pathsep.join([os.environ[artifacts.EXTRA_ARTIFACTS_VARIABLE], str(tmp_path)]),
    )
    execute_run(SMOKE_RUNS[0], tmp_path / "runs", RECORD_RUN)
    failed_dir = run_directory(SMOKE_RUNS[1], tmp_path / "runs")
    failed_dir.mkdir(parents=True)
    (failed_dir / "error.json").write_text(json.dumps({"exception_type": "RuntimeError", "message": "boom"}))
    console = Console(file=io.StringIO(), width=80)
    console.print(list_artifacts(tmp_path / "runs", ["sweep-fixture", f"{long_name}-x"], ["smoke", "mini"]))
    lines = console.file.getvalue().splitlines()
    assert max(map(len, lines)) <= 80
    header, rows = listed(console)
    assert [row[:2] for row in rows] == [
        ["sweep-fixture", "smoke"],
        ["sweep-fixture", "mini"],
        [f"{long_name}-x", "smoke"],
        [f"{long_name}-x", "mini"],
    ]
    assert dict(zip(header[2:], rows[0][2:])) == {"runs": "6", "done": "1", "failed": "1", "missing": "5"}
    assert dict(zip(header[2:], rows[3][2:])) == {"runs": "6", "done": "0", "failed": "0", "missing": "6"}


def test_missing_and_running_runs(tmp_path):
    run = SMOKE_RUNS[0]
    assert list(runs_frame([run], tmp_path)["status"]) == ["missing"]
    run_dir = run_directory(run, tmp_path)
    claim = claim_run(run_dir)
    assert list(runs_frame([run], tmp_path)["status"]) == ["running"]
    release(claim)


# --- the submitit launch --------------------------------------------------------------------------------------------


def test_manifest_round_trip_keeps_the_run_ids(tmp_path):
    manifest = Manifest(tmp_path, RECORD_RUN, 12.0, SMOKE_RUNS)
    read = read_manifest(write_manifest(tmp_path / "manifest.json", manifest))
    assert [run_id_of(run.config) for run in read.runs] == [run.run_id for run in SMOKE_RUNS]
    assert [run.cell for run in read.runs] == [run.cell for run in SMOKE_RUNS]
    assert (read.root, read.run_function, read.stale_after_seconds) == (tmp_path, RECORD_RUN, 12.0)


def test_hydra_command_selects_the_submitit_launcher_and_its_parameters(tmp_path):
    command = hydra_command(load_launcher("slurm")["hydra_launcher"], tmp_path, tmp_path / "manifest.json", 3)
    assert command[1:5] == ["-m", "experiments.sweeps.hydra_worker", "--multirun", "hydra/launcher=submitit_slurm"]
    assert "hydra.launcher.submitit_folder='${hydra.sweep.dir}/.submitit/%j'" in command
    assert "hydra.launcher.gpus_per_node=1" in command and "hydra.launcher.partition=null" in command
    assert command[-3:] == [
        f"hydra.sweep.dir='{tmp_path}'",
        f"+manifest='{tmp_path}/manifest.json'",
        "+index=range(0,3)",
    ]
    assert not any("_target_" in part for part in command)
