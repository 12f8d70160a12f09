"""The sweep runner end to end with fake run functions: dry run, failures, kill and restart, concurrent sweeps,
the submitit launcher path and the command line."""

import argparse
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from experiments.config.artifacts import MODEL_NOT_REGISTERED
from experiments.config.configuration import ConfigError
from experiments.paths import REPOSITORY_ROOT
from experiments.sweeps.claims import CLAIM_FILE
from experiments.sweeps.run_subset import same_value
from experiments.sweeps.sweep import add_sweep_arguments, hydra_command, load_launcher, run_sweep
from experiments.sweeps.sweep import main as sweep_main
from tests.sweep_fakes import EXECUTIONS, RECORD_RUN, UNBUILT_MODEL, count_lines, small_artifact

NO_TORCH = "trainer.num_threads=null"  # the fakes need no torch: workers start faster


def captured_console() -> Console:
    return Console(file=io.StringIO(), width=250)


def text_of(console: Console) -> str:
    return console.file.getvalue()


def run_dirs(root: Path) -> list[Path]:
    return sorted(path.parent for path in root.glob("smoke/sweep-fixture/*/cell.json"))


def sweep_command_line(root: Path, *arguments: str) -> list[str]:
    """The CLI entry of the sweep runner on the fixture artifact's smoke grid (6 runs) with the fake run function."""
    return [sys.executable, "-m", "experiments.sweeps.sweep", "sweep-fixture", "--scale", "smoke", "--run-function", RECORD_RUN,
            "--root", str(root), *arguments, NO_TORCH]  # fmt: skip


def wait_until(condition, timeout_seconds: float = 180) -> None:
    deadline = time.monotonic() + timeout_seconds
    while not condition():
        assert time.monotonic() < deadline, "the sweep did not get there"
        time.sleep(0.05)


def test_dry_run_lists_runs_and_estimate_and_writes_nothing(tmp_path):
    console = captured_console()
    artifact = small_artifact([UNBUILT_MODEL, "xlstm_1_0"], tasks=["parity", "even_pairs"])
    assert run_sweep(artifact, "smoke", dry_run=True, root=tmp_path / "runs", console=console) == 0
    output = text_of(console)
    assert f"not available: {MODEL_NOT_REGISTERED}" in output
    assert "4 runs: done 0, pending 2, failed 0, running elsewhere 0, damaged 0, not available 2" in output
    # 2 runs x max_steps 10 x batch_size 8 x train_max_length 40 (sweep-fixture smoke)
    assert "for the 2 pending, failed and damaged runs: 6.4e+03 training tokens" in output and "estimate" in output
    assert not (tmp_path / "runs").exists()


def test_dry_run_sums_the_selection_keys_per_cell_and_lists_every_run_only_when_verbose(tmp_path):
    done_before = small_artifact(["xlstm_1_0"], tasks=["parity"], seeds=[0])
    assert (
        run_sweep(
            done_before,
            "smoke",
            jobs=1,
            overrides=[NO_TORCH],
            run_function=RECORD_RUN,
            root=tmp_path,
            console=captured_console(),
        )
        == 0
    )
    artifact = small_artifact(["xlstm_1_0", "xlstm_0_1"], tasks=["parity", "even_pairs"], seeds=[0, 1])
    [summary, verbose] = [captured_console(), captured_console()]
    run_sweep(artifact, "smoke", dry_run=True, overrides=[NO_TORCH], root=tmp_path, console=summary)
    run_sweep(artifact, "smoke", dry_run=True, verbose=True, overrides=[NO_TORCH], root=tmp_path, console=verbose)
    rows = [
        line.split() for line in text_of(summary).splitlines() if line.split()[:1] in (["xlstm_1_0"], ["xlstm_0_1"])
    ]
    # model, task, runs, done, missing, tokens (10 steps x batch 8 x length 40 per pending run)
    assert rows == [
        ["xlstm_1_0", "parity", "2", "1", "1", "3.2e+03"],
        ["xlstm_1_0", "even_pairs", "2", "0", "2", "6.4e+03"],
        ["xlstm_0_1", "parity", "2", "0", "2", "6.4e+03"],
        ["xlstm_0_1", "even_pairs", "2", "0", "2", "6.4e+03"],
    ]
    assert "each row sums the runs over optim.lr, seed" in text_of(summary)
    runs = artifact.runs("smoke", [NO_TORCH])
    assert not any(run.run_id in text_of(summary) for run in runs)
    assert all(run.run_id in text_of(verbose) for run in runs)
    assert text_of(verbose).endswith(text_of(summary))


@pytest.mark.parametrize(
    "arguments, message",
    [
        (("formal-nope", "smoke"), "unknown artifact 'formal-nope'"),
        (("sweep-fixture", "huge"), "unknown scale 'huge'"),
        (
            ("sweep-fixture", "smoke", "cluster"),
            "unknown launcher 'cluster'; valid choices: ['local', 'slurm', 'submitit_local']",
        ),
    ],
)
def test_bad_sweep_input_fails_before_writing(tmp_path, arguments, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[")):
        run_sweep(*arguments, root=tmp_path / "runs", run_function=RECORD_RUN)
    assert not (tmp_path / "runs").exists()


def test_bad_override_or_run_function_fails_before_writing(tmp_path):
    with pytest.raises(ConfigError, match="unknown task 'nope'"):
        run_sweep("sweep-fixture", "smoke", overrides=["task=nope"], root=tmp_path / "runs", run_function=RECORD_RUN)
    with pytest.raises(ValueError, match="run function 'tests.nowhere.run'"):
        run_sweep("sweep-fixture", "smoke", root=tmp_path / "runs", run_function="tests.nowhere.run")
    assert not (tmp_path / "runs").exists()


def test_failed_run_is_reported_and_the_others_finish(tmp_path):
    console = captured_console()
    artifact = small_artifact([UNBUILT_MODEL, "xlstm_0_1", "xlstm_1_0", "xlstm_1_1"])
    overrides = ["+debug.fail_model=xlstm_1_0", NO_TORCH]
    exit_code = run_sweep(
        artifact, "smoke", jobs=2, overrides=overrides, run_function=RECORD_RUN, root=tmp_path, console=console
    )
    assert exit_code == 1
    failed = [run for run in artifact.runs("smoke", overrides) if run.cell["model"] == "xlstm_1_0"][0]
    failed_dir = tmp_path / "smoke" / "sweep-fixture" / failed.run_id
    assert not (failed_dir / "result.json").exists()
    assert "injected failure" in json.loads((failed_dir / "error.json").read_text())["traceback"]
    done = [path for path in run_dirs(tmp_path) if (path / "result.json").exists()]
    assert len(done) == 2 and len(run_dirs(tmp_path)) == 3  # the unbuilt model is not run
    output = text_of(console)
    assert "failed: 1" in output and f"{failed.label}: RuntimeError: injected failure" in output
    assert str(failed_dir / "error.json") in output
    assert f"not available: 1\n    {UNBUILT_MODEL}: {MODEL_NOT_REGISTERED}" in output


def test_a_killed_worker_fails_only_its_own_run(tmp_path):
    console = captured_console()
    artifact = small_artifact(["xlstm_0_1", "xlstm_1_0", "xlstm_1_1"])
    # xlstm_0_1's run is in flight (sleeping for a second) when xlstm_1_0's worker is killed; xlstm_1_1's starts after
    overrides = ["+debug.exit_model=xlstm_1_0", "+debug.sleep_seconds=1", NO_TORCH]
    exit_code = run_sweep(
        artifact, "smoke", jobs=2, overrides=overrides, run_function=RECORD_RUN, root=tmp_path, console=console
    )
    assert exit_code == 1
    runs = {run.run_id: run for run in artifact.runs("smoke", overrides)}
    failed = {path.name for path in run_dirs(tmp_path) if (path / "error.json").exists()}
    assert [runs[run_id].cell["model"] for run_id in failed] == ["xlstm_1_0"]
    error = json.loads((tmp_path / "smoke" / "sweep-fixture" / failed.pop() / "error.json").read_text())
    assert (
        error["message"]
        == "its worker process died while the run was in flight (killed by signal SIGKILL: out of memory?)"
    )
    assert sum(is_done(path) for path in run_dirs(tmp_path)) == 2 and "failed: 1" in text_of(console)
    assert all(count_lines(path / EXECUTIONS) == 1 for path in run_dirs(tmp_path))


def test_unavailable_models_do_not_fail_the_sweep_and_done_runs_are_skipped(tmp_path):
    artifact = small_artifact([UNBUILT_MODEL, "xlstm_1_0"])
    for _ in range(2):
        console = captured_console()
        assert (
            run_sweep(
                artifact, "smoke", jobs=1, overrides=[NO_TORCH], run_function=RECORD_RUN, root=tmp_path, console=console
            )
            == 0
        )
    assert "skipped, already done: 1" in text_of(console)
    assert [count_lines(path / EXECUTIONS) for path in run_dirs(tmp_path)] == [1]


def test_killed_sweep_continues_where_it_stopped(tmp_path):
    command = sweep_command_line(tmp_path, "--jobs", "2", "+debug.sleep_seconds=1")
    sweep = subprocess.Popen(
        command, cwd=REPOSITORY_ROOT, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_until(
            lambda: (
                any(in_progress(path) for path in run_dirs(tmp_path))
                and any(is_done(path) for path in run_dirs(tmp_path))
            )
        )
    finally:
        os.killpg(sweep.pid, signal.SIGKILL)
        sweep.wait()
    done_before = [path for path in run_dirs(tmp_path) if is_done(path)]
    interrupted = [path for path in run_dirs(tmp_path) if in_progress(path)]
    assert interrupted and all((path / CLAIM_FILE).exists() for path in interrupted)  # claims of killed workers
    # killed between writing its result and releasing its claim (the kill comes as the first result appears): a
    # finished run, which no sweep runs again, keeps its dead worker's claim
    killed_after_its_result = {path / CLAIM_FILE for path in done_before if (path / CLAIM_FILE).exists()}

    restart = subprocess.run(command, cwd=REPOSITORY_ROOT, capture_output=True, text=True)
    assert restart.returncode == 0, restart.stdout + restart.stderr
    assert len(run_dirs(tmp_path)) == 6 and all(is_done(path) for path in run_dirs(tmp_path))
    assert [count_lines(path / EXECUTIONS) for path in done_before] == [1] * len(done_before)
    assert [count_lines(path / EXECUTIONS) for path in interrupted] == [2] * len(interrupted)
    others = [path for path in run_dirs(tmp_path) if path not in done_before + interrupted]
    assert [count_lines(path / EXECUTIONS) for path in others] == [1] * len(others)
    assert set(tmp_path.glob(f"smoke/sweep-fixture/*/{CLAIM_FILE}")) == killed_after_its_result
    assert not list(tmp_path.glob(f"smoke/sweep-fixture/*/.{CLAIM_FILE}*"))  # takeover markers, drafts
    assert f"skipped, already done: {len(done_before)}" in restart.stdout


def is_done(run_dir: Path) -> bool:
    return (run_dir / "result.json").exists()


def in_progress(run_dir: Path) -> bool:
    return count_lines(run_dir / EXECUTIONS) > 0 and not is_done(run_dir)


def test_two_sweeps_started_together_run_every_run_once(tmp_path):
    command = sweep_command_line(tmp_path, "--jobs", "2", "+debug.sleep_seconds=0.5")
    sweeps = [
        subprocess.Popen(command, cwd=REPOSITORY_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for _ in range(2)
    ]
    outputs = [sweep.communicate()[0] for sweep in sweeps]
    assert [sweep.returncode for sweep in sweeps] == [0, 0], outputs
    assert len(run_dirs(tmp_path)) == 6
    assert [count_lines(path / EXECUTIONS) for path in run_dirs(tmp_path)] == [1] * 6
    assert all(is_done(path) for path in run_dirs(tmp_path))


def test_submitit_local_launcher_runs_the_sweep_through_hydra(tmp_path):
    console = captured_console()
    artifact = small_artifact(["xlstm_1_0"], tasks=["parity", "even_pairs"])
    exit_code = run_sweep(
        artifact,
        "smoke",
        launcher="submitit_local",
        overrides=[NO_TORCH],
        run_function=RECORD_RUN,
        root=tmp_path,
        console=console,
    )
    assert exit_code == 0, text_of(console)
    assert len(run_dirs(tmp_path)) == 2 and all(is_done(path) for path in run_dirs(tmp_path))
    assert [count_lines(path / EXECUTIONS) for path in run_dirs(tmp_path)] == [1, 1]
    launch = next(tmp_path.glob("smoke/sweep-fixture/.launches/*"))
    assert (launch / "manifest.json").exists() and list(launch.glob(".submitit/*/*_log.out"))
    assert "done now: 2" in text_of(console)


def test_slurm_launcher_parameters_are_valid_hydra_overrides(tmp_path):
    """The slurm path cannot run here (no sbatch); Hydra must accept its launcher overrides all the same."""
    command = hydra_command(load_launcher("slurm")["hydra_launcher"], tmp_path, tmp_path / "manifest.json", 3)
    single_job = [part for part in command if part != "--multirun"][:-1] + ["+index=0"]
    shown = subprocess.run(
        [*single_job, "--cfg", "hydra", "--package", "hydra.launcher"],
        cwd=REPOSITORY_ROOT,
        capture_output=True,
        text=True,
    )
    assert shown.returncode == 0, shown.stderr
    assert (
        "SlurmLauncher" in shown.stdout
        and "gpus_per_node: 1" in shown.stdout
        and "array_parallelism: 64" in shown.stdout
    )
    assert "additional_parameters:\n  signal: USR1@120" in shown.stdout  # Lightning's requeue signal


def test_overrides_may_follow_options_on_the_command_line():
    parser = argparse.ArgumentParser()
    add_sweep_arguments(parser)
    arguments = parser.parse_args(["sweep-fixture", "a=1", "--scale", "mini", "model.x=0", "+b=2", "--jobs", "3", "~c"])
    assert (arguments.artifact, arguments.scale, arguments.jobs) == ("sweep-fixture", "mini", 3)
    assert arguments.overrides == ["a=1", "model.x=0", "+b=2", "~c"]
    with pytest.raises(SystemExit):
        parser.parse_args(["sweep-fixture", "--scale", "mini", "--no-such-option"])


def test_bad_input_on_the_command_line_is_one_line_and_exit_code_2(tmp_path, capsys):
    assert sweep_main(["formal-nope", "--scale", "smoke", "--root", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith(
        "xlstm-suite sweep: error: unknown artifact 'formal-nope'; valid choices: ["
    )
    assert list(tmp_path.iterdir()) == []


def test_where_runs_part_of_the_grid_with_the_same_run_ids(tmp_path):
    artifact = small_artifact(["xlstm_0_1", "xlstm_1_0"], tasks=["parity", "even_pairs"], seeds=[0, 1])
    console = captured_console()
    assert (
        run_sweep(
            artifact,
            "smoke",
            jobs=1,
            overrides=[NO_TORCH],
            run_function=RECORD_RUN,
            root=tmp_path,
            console=console,
            where=["model=xlstm_1_0", "seed=1", "seed=0", "task=parity"],
        )
        == 0
    )
    expected = {
        run.run_id
        for run in artifact.runs("smoke", [NO_TORCH])
        if run.cell["model"] == "xlstm_1_0" and run.cell["task"] == "parity"
    }
    assert {path.name for path in tmp_path.glob("smoke/*/*") if (path / "result.json").exists()} == expected
    assert len(expected) == 2 and "2 runs planned (--where: 2 of the grid's 8), 2 to run" in text_of(console)
    rest = captured_console()  # the whole grid afterwards skips them
    assert (
        run_sweep(artifact, "smoke", jobs=1, overrides=[NO_TORCH], run_function=RECORD_RUN, root=tmp_path, console=rest)
        == 0
    )
    assert "8 runs planned, 6 to run" in text_of(rest)


def test_where_compares_numbers_as_numbers():
    assert same_value(0.001, "1e-3") and same_value(192, "192") and same_value(192, "192.0")
    assert not same_value(192, "128") and not same_value(True, "1") and same_value(True, "true")
    assert same_value("post_up_projection", "post_up_projection") and not same_value("llama", "1")


@pytest.mark.parametrize(
    "where, message",
    [
        (
            ["modell=xlstm_1_0"],
            "--where modell=...: 'modell' is not a key of the artifact's cells; valid keys: ['model'",
        ),
        (["model=llama"], "--where model=llama: no cell has that value; its values: ['xlstm_0_1', 'xlstm_1_0']"),
        (["model"], "--where 'model' is not KEY=VALUE"),
    ],
)
def test_a_bad_where_is_named_before_anything_runs(tmp_path, where, message):
    artifact = small_artifact(["xlstm_0_1", "xlstm_1_0"], tasks=["parity"], seeds=[0])
    with pytest.raises(ValueError, match=message.replace("[", r"\[")):
        run_sweep(artifact, "smoke", overrides=[NO_TORCH], run_function=RECORD_RUN, root=tmp_path / "runs", where=where)
    assert not (tmp_path / "runs").exists()


def test_a_local_launcher_with_no_run_to_run_starts_no_process(monkeypatch):
    """A sweep whose runs are all done starts no forkserver: it would import training for nothing, and hold the
    command's output open while it does (a rerun of a finished smoke sweep took 12.6 s, not 1.3 s)."""
    from experiments.sweeps import local_launcher

    def no_process(run_function):
        raise AssertionError("a worker context was made for no run")

    monkeypatch.setattr(local_launcher, "worker_context", no_process)
    assert local_launcher.run_locally([], Path("runs"), "training", 2, 60.0, captured_console()) == []
