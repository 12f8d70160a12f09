"""Sweeps on SLURM end to end, through the fake SLURM executables of tests/fake_slurm (real processes: sbatch records
the script and runs the array, srun starts a process per task with SLURM's variables, scontrol requeue ends and
restarts a job, squeue and sacct read the job table): the script submitted, the ranks of a job following rank 0,
requeue at SLURM's warning signal wherever it arrives, a rerun that submits nothing already queued, a wait that
collects every job whichever fails, and the dry run's launcher checks and plan."""

import io
import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
import torch
from rich.console import Console

from experiments.paths import REPOSITORY_ROOT
from experiments.sweeps.claims import heartbeat_seconds_for, holding
from experiments.sweeps.run_store import RESULT_FILE, claim_run, write_result, write_run_inputs
from experiments.sweeps.slurm_jobs import JOB_FILE
from experiments.sweeps.sweep import run_sweep
from tests.experiments.sweeps.test_sweep import NO_TORCH, wait_until
from tests.slurm_runs import (
    DYING_RUN,
    EXIT_MODEL_VARIABLE,
    PREPARATION_SECONDS_VARIABLE,
    STEP_SECONDS_VARIABLE,
    USR1_VARIABLE,
    attempts,
    reference_weights,
)
from tests.sweep_fakes import EXECUTIONS, RECORD_RUN, count_lines, small_artifact

FAKES = Path(__file__).parents[2] / "fake_slurm"
GLOO_RUN = "tests.slurm_runs.gloo_run"
CPU_JOBS = ["hydra.launcher.gpus_per_node=0", "hydra.launcher.cpus_per_task=1"]  # the fixture's runs train on CPUs
TWO_TASKS = [*CPU_JOBS, "hydra.launcher.tasks_per_node=2", "trainer.devices=2"]
POLL = 0.2  # seconds between squeue calls of a waiting sweep


class FakeSlurm:
    """The fake cluster's state folder and what the tests ask of it."""

    def __init__(self, state: Path) -> None:
        self.state = state

    def jobs(self) -> list[dict]:
        return [json.loads(path.read_text()) for path in sorted((self.state / "jobs").glob("*.json"))]

    def scripts(self) -> list[str]:
        return [path.read_text() for path in sorted((self.state / "scripts").glob("*.sh"))]

    def hold(self) -> None:
        (self.state / "hold").touch()

    def release(self) -> None:
        (self.state / "hold").unlink()

    def called(self, pid: int, command: str) -> bool:
        """Whether process ``pid`` has called ``command``."""
        calls = self.state / "calls.log"
        return calls.exists() and any(
            line.split()[:2] == [str(pid), command] for line in calls.read_text().splitlines()
        )

    def command(self, *arguments: str) -> subprocess.CompletedProcess:
        return subprocess.run(arguments, capture_output=True, text=True, timeout=60)


@pytest.fixture
def fake_slurm(tmp_path, monkeypatch):
    """The fake executables first on PATH, for this process and every process it starts; every job cancelled and
    every process of a job killed afterwards."""
    state = tmp_path / "slurm"
    state.mkdir()
    monkeypatch.setenv("PATH", f"{FAKES}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SLURM_STATE", str(state))
    monkeypatch.setenv("FAKE_SLURM_PYTHON", sys.executable)
    monkeypatch.setenv("FAKE_SLURM_KILL_WAIT", "5")
    cluster = FakeSlurm(state)
    yield cluster
    arrays = sorted({job["array_job"] for job in cluster.jobs() if job["state"] in ("PENDING", "RUNNING")})
    if arrays:
        cluster.command("scancel", *arrays)  # while held, no pending job starts meanwhile
    (state / "hold").unlink(missing_ok=True)
    for job in cluster.jobs():
        if job["batch_pgid"]:
            try:
                os.killpg(job["batch_pgid"], signal.SIGKILL)
            except ProcessLookupError:
                pass


def console_text(console: Console) -> str:
    return console.file.getvalue()


def sweep(
    root: Path,
    *overrides: str,
    artifact=None,
    run_function: str = RECORD_RUN,
    wait: bool = True,
    where: tuple[str, ...] = (),
) -> tuple[int, str]:
    """A slurm sweep in this process (the fakes on PATH), its exit code and output."""
    console = Console(file=io.StringIO(), width=250)
    artifact = artifact or small_artifact(["xlstm_0_1", "xlstm_1_0"])
    code = run_sweep(
        artifact,
        "smoke",
        launcher="slurm",
        overrides=[NO_TORCH, *overrides],
        run_function=run_function,
        root=root,
        console=console,
        wait=wait,
        poll_seconds=POLL,
        stale_after_seconds=30.0,
        where=list(where),
    )
    return code, console_text(console)


def run_dirs(root: Path) -> list[Path]:
    return sorted(path.parent for path in root.glob("smoke/*/*/cell.json"))


def submitted_jobs(root: Path) -> list[str]:
    return sorted(json.loads(path.read_text())["job_id"] for path in root.glob(f"smoke/*/*/{JOB_FILE}"))


# --- the submitted script and a rerun while it is queued ----------------------------------------------------------


@pytest.mark.slow  # plans the paper's runs in three processes
def test_a_paper_sweep_submits_one_array_with_its_nodes_gpus_requeue_and_a_rerun_submits_nothing_queued(
    fake_slurm, tmp_path
):
    """Table 1 at paper scale with the README's placement: one array of 15 jobs of 8 nodes x 8 GPUs, SLURM's warning
    before the time limit, requeue allowed; nothing runs (held). Run again while it is queued, the sweep submits no
    second array; `status` lists the 15 runs as queued."""
    fake_slurm.hold()
    command = [
        sys.executable,
        "-m",
        "experiments.cli",
        "sweep",
        "spaj15b_model_results",
        "--scale",
        "paper",
        "--launcher",
        "slurm",
        "--no-wait",
        "--root",
        str(tmp_path / "runs"),
        "+trainer.num_nodes=8",
        "hydra.launcher.nodes=8",
        "hydra.launcher.tasks_per_node=8",
        "hydra.launcher.gpus_per_node=8",
        "hydra.launcher.partition=gpu",
        "hydra.launcher.account=xlstm",
    ]
    first = subprocess.run(command, cwd=REPOSITORY_ROOT, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stdout + first.stderr
    [script] = fake_slurm.scripts()
    for line in [
        "--array=0-14%15",
        "--nodes=8",
        "--ntasks-per-node=8",
        "--gpus-per-node=8",
        "--signal=USR1@120",
        "--open-mode=append",
        "--requeue",
        "--partition=gpu",
        "--account=xlstm",
        "--mem-per-gpu=64G",
    ]:
        assert f"#SBATCH {line}\n" in script
    assert "export SLURM_KILL_BAD_EXIT=1\n" in script and "\nsrun " in script
    assert len(fake_slurm.jobs()) == 15 and {job["state"] for job in fake_slurm.jobs()} == {"PENDING"}

    again = subprocess.run(command, cwd=REPOSITORY_ROOT, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(fake_slurm.scripts()) == 1 and len(fake_slurm.jobs()) == 15
    assert "15 runs queued or running as SLURM jobs" in " ".join(again.stdout.split())
    status = subprocess.run(
        [
            sys.executable,
            "-m",
            "experiments.cli",
            "status",
            "spaj15b_model_results",
            "--scale",
            "paper",
            "--root",
            str(tmp_path / "runs"),
            "+trainer.num_nodes=8",
        ],
        cwd=REPOSITORY_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert status.returncode == 0 and "15 runs: done 0, queued 15, running 0, failed 0" in status.stdout, status.stdout


def test_a_sweep_submits_one_requeueable_array_and_exits_and_its_rerun_while_queued_submits_nothing(
    fake_slurm, tmp_path
):
    """Quick (the fake cluster holds its queue: nothing runs). Rerunning a sweep while its jobs were queued submitted a
    second array (30 pending instead of 15); now the rerun asks squeue about the jobs its runs recorded and submits
    none of them again. ``--no-wait`` submits and exits."""
    fake_slurm.hold()
    root = tmp_path / "runs"
    code, output = sweep(root, *CPU_JOBS, wait=False)
    assert code == 0, output
    [script] = fake_slurm.scripts()
    for line in ["--array=0-1%2", "--signal=USR1@120", "--open-mode=append", "--requeue"]:
        assert f"#SBATCH {line}\n" in script
    assert len(submitted_jobs(root)) == 2 and {job["state"] for job in fake_slurm.jobs()} == {"PENDING"}
    assert "2 runs queued or running as SLURM jobs" in " ".join(output.split())
    code, output = sweep(root, *CPU_JOBS, wait=False)
    assert code == 0, output
    assert len(fake_slurm.scripts()) == 1 and len(fake_slurm.jobs()) == 2
    assert "2 runs planned, 0 to run, 2 queued or running as SLURM jobs" in " ".join(output.split())


@pytest.mark.slow  # two sweeps in processes of their own, and the jobs' processes
def test_two_sweeps_of_the_same_runs_on_slurm_submit_them_once_and_both_collect_them(fake_slurm, tmp_path):
    """Rerunning a sweep while its jobs are queued (the interrupt message's "rerun the same command") submitted a
    second array; now the second sweep finds the jobs queued and waits for them."""
    fake_slurm.hold()
    root = tmp_path / "runs"
    arguments = [
        sys.executable,
        "-m",
        "experiments.sweeps.sweep",
        "sweep-fixture",
        "--scale",
        "smoke",
        "--launcher",
        "slurm",
        "--run-function",
        RECORD_RUN,
        "--root",
        str(root),
        "--poll-seconds",
        str(POLL),
        "--where",
        "model=xlstm_0_1",
        NO_TORCH,
        *CPU_JOBS,
    ]
    first = subprocess.Popen(
        arguments, cwd=REPOSITORY_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        wait_until(lambda: len(submitted_jobs(root)) == 2, timeout_seconds=120)
        second = subprocess.Popen(
            arguments, cwd=REPOSITORY_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        wait_until(lambda: len(fake_slurm.scripts()) > 1 or fake_slurm.called(second.pid, "squeue"))  # it has planned
        fake_slurm.release()
        outputs = [first.communicate(timeout=120)[0], second.communicate(timeout=120)[0]]
    finally:
        for process in (first, locals().get("second")):
            if process is not None and process.poll() is None:
                process.kill()
    assert [first.returncode, second.returncode] == [0, 0], outputs
    [script] = fake_slurm.scripts()
    for line in ["--array=0-1%2", "--signal=USR1@120", "--open-mode=append", "--requeue"]:
        assert f"#SBATCH {line}\n" in script
    assert len(fake_slurm.jobs()) == 2 and "2 runs queued or running as SLURM jobs" in " ".join(outputs[1].split())
    assert [count_lines(run_dir / EXECUTIONS) for run_dir in run_dirs(root)] == [1, 1]
    assert all("done: model=xlstm_0_1" in output for output in outputs)


# --- collecting the jobs ------------------------------------------------------------------------------------------


@pytest.mark.slow  # the jobs' processes: a few seconds each under load
def test_a_job_that_dies_fails_its_run_only_and_the_wait_collects_the_others(fake_slurm, tmp_path, monkeypatch):
    """One array element at a time; the second dies (its task killed, as the out-of-memory killer would): submitit
    raised and the sweep reported the third, still queued, as failed. Now the wait goes on and collects it, and the
    next sweep submits only the failed run."""
    root = tmp_path / "runs"
    artifact = small_artifact(["xlstm_0_1", "xlstm_1_0", "xlstm_1_1"])
    monkeypatch.setenv(EXIT_MODEL_VARIABLE, "xlstm_1_0")
    code, output = sweep(
        root,
        *CPU_JOBS,
        "hydra.launcher.array_parallelism=1",
        artifact=artifact,
        run_function=DYING_RUN,
        where=("task=parity",),
    )
    assert code == 1, output
    lines = " ".join(output.split())
    assert "done: model=xlstm_0_1" in lines and "done: model=xlstm_1_1" in lines
    assert "failed: model=xlstm_1_0 task=parity optim.lr=0.001 seed=0: SLURM job" in lines and "ended FAILED" in lines
    assert "done now: 2" in lines and "failed: 1" in lines
    monkeypatch.delenv(EXIT_MODEL_VARIABLE)
    code, output = sweep(root, *CPU_JOBS, artifact=artifact, run_function=DYING_RUN, where=("task=parity",))
    assert code == 0, output
    assert len(fake_slurm.scripts()) == 2 and len(fake_slurm.jobs()) == 4  # the second array: the failed run alone
    assert sorted(count_lines(run_dir / EXECUTIONS) for run_dir in run_dirs(root)) == [1, 1, 2]


# --- the ranks of a job follow rank 0 -----------------------------------------------------------------------------


@pytest.mark.slow  # the jobs' processes: a few seconds each under load
def test_the_ranks_of_a_job_that_lost_the_claim_exit_with_rank_0_and_a_run_finished_meanwhile_is_not_resubmitted(
    fake_slurm, tmp_path
):
    """Another worker claims a run while its two-task job waits in the queue: rank 0 finds the run claimed and rank 1,
    told so, exits with it (it trained alone and waited for rank 0 in the rendezvous). The sweep waits for the claim;
    the other worker finishes the run, and the sweep does not submit it again."""
    root, log = tmp_path / "runs", tmp_path / "sweep.log"
    fake_slurm.hold()
    with open(log, "w") as output:
        sweep_process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "experiments.sweeps.sweep",
                "sweep-fixture",
                "--scale",
                "smoke",
                "--launcher",
                "slurm",
                "--run-function",
                GLOO_RUN,
                "--root",
                str(root),
                "--poll-seconds",
                str(POLL),
                "--claim-timeout",
                "30",
                "--where",
                "model=xlstm_0_1",
                "--where",
                "task=parity",
                NO_TORCH,
                *TWO_TASKS,
            ],
            cwd=REPOSITORY_ROOT,
            stdout=output,
            stderr=subprocess.STDOUT,
            text=True,
        )
    try:
        wait_until(lambda: len(submitted_jobs(root)) == 1, timeout_seconds=120)
        [run_dir] = [path.parent for path in root.glob(f"smoke/*/*/{JOB_FILE}")]
        [run] = small_artifact(["xlstm_0_1"], tasks=["parity"]).runs("smoke", [NO_TORCH, "trainer.devices=2"])
        with holding(claim_run(run_dir, 30.0), heartbeat_seconds_for(30.0)):  # another worker takes the run
            fake_slurm.release()
            wait_until(lambda: "waiting for 1 runs that other workers hold" in log.read_text(), timeout_seconds=120)
            assert fake_slurm.jobs()[0]["state"] == "COMPLETED" and attempts(run_dir) == []  # no rank trained
            write_run_inputs(run_dir, run)  # the other worker finishes the run, then releases it
            write_result(run_dir, run, {"val/scaled_accuracy": 1.0}, datetime.now(UTC))
        sweep_process.wait(timeout=120)
    finally:
        if sweep_process.poll() is None:
            sweep_process.kill()
    assert sweep_process.returncode == 0, log.read_text()
    assert len(fake_slurm.scripts()) == 1 and "skipped, already done: 1" in log.read_text(), log.read_text()


# --- requeue at SLURM's signal ------------------------------------------------------------------------------------


def requeued_sweep(root: Path, usr1: str, monkeypatch) -> tuple[Path, str]:
    """A two-task job of gloo_run whose rank receives SLURM's USR1 as ``usr1`` (USR1_VARIABLE) says."""
    monkeypatch.setenv(USR1_VARIABLE, usr1)
    monkeypatch.setenv(STEP_SECONDS_VARIABLE, "0.05")
    artifact = small_artifact(["xlstm_0_1"], tasks=["parity"])
    code, output = sweep(root, *TWO_TASKS, "trainer.max_steps=12", artifact=artifact, run_function=GLOO_RUN)
    assert code == 0, output
    [run_dir] = run_dirs(root)
    assert (run_dir / RESULT_FILE).exists()
    return run_dir, output


@pytest.mark.slow  # two processes per attempt, each importing torch, two attempts
@pytest.mark.parametrize("during", ["backward", "preparation"])
def test_a_job_signalled_before_its_time_limit_saves_requeues_and_resumes_where_it_stopped(
    fake_slurm, tmp_path, during, monkeypatch
):
    """SLURM's USR1 reaches rank 1 alone, inside its backward pass (or while it prepares its data): both ranks stop at
    the next step boundary with the state saved, rank 0 requeues the job, and its next attempt resumes there and
    ends with the weights of an uninterrupted run. (Lightning's handler saved inside the signal with a barrier that
    rank 0, in its own backward, never reached.)"""
    run_dir, output = requeued_sweep(tmp_path / "runs", f"1:3:{during}", monkeypatch)
    started = attempts(run_dir)
    assert sorted((rank, restart) for rank, restart, _ in started) == [(0, 0), (0, 1), (1, 0), (1, 1)], started
    resumed_at = {step for rank, restart, step in started if restart == 1}
    assert len(resumed_at) == 1 and 0 < resumed_at.pop() < 12  # both ranks at the same saved step
    wait_until(lambda: fake_slurm.jobs()[0]["state"] != "RUNNING", timeout_seconds=60)  # its processes leave
    assert [(job["restart_count"], job["state"]) for job in fake_slurm.jobs()] == [(1, "COMPLETED")]
    result = json.loads((run_dir / RESULT_FILE).read_text())["metrics"]
    expected = reference_weights(seed=0, steps=12, world_size=2)
    torch.testing.assert_close(torch.tensor([result[f"weight/{index}"] for index in range(len(expected))]), expected)
    assert not (run_dir / "error.json").exists()


def catches(pid: int, signum: int) -> bool:
    """Whether process ``pid`` has a handler of its own for ``signum`` (its SigCgt mask in /proc)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
    return bool(caught >> (signum - 1) & 1)


def signalled_at_a_random_moment(fake_slurm, root: Path, seed: int) -> tuple[Path, str]:
    """A sweep of one two-task gloo_run job; once its tasks handle SIGUSR1 (their worker started), after a random
    delay, USR1 to rank 0, rank 1 or both (as SLURM sends it to every task, or as one task gets it first)."""
    import random

    generator = random.Random(seed)
    phase, ranks = generator.choice(["preparation", "training"]), generator.choice([[0], [1], [0, 1]])
    delay = generator.uniform(0.0, 0.4 if phase == "preparation" else 1.5)
    moment = f"USR1 to ranks {ranks} {delay:.2f} s into their {phase} (seed {seed})"
    log = root.parent / f"sweep-{seed}.log"
    with open(log, "w") as output:
        sweep_process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "experiments.sweeps.sweep",
                "sweep-fixture",
                "--scale",
                "smoke",
                "--launcher",
                "slurm",
                "--run-function",
                GLOO_RUN,
                "--root",
                str(root),
                "--poll-seconds",
                str(POLL),
                "--where",
                "model=xlstm_0_1",
                "--where",
                "task=parity",
                NO_TORCH,
                *TWO_TASKS,
                "trainer.max_steps=20",
            ],
            cwd=REPOSITORY_ROOT,
            stdout=output,
            stderr=subprocess.STDOUT,
            env=os.environ | {STEP_SECONDS_VARIABLE: "0.1", PREPARATION_SECONDS_VARIABLE: "0.5"},
        )
    try:

        def started() -> bool:  # the workers handle USR1 (from their start), and are training if that is the phase
            jobs = fake_slurm.jobs()
            return (
                bool(jobs)
                and len(jobs[-1]["task_pids"]) == 2
                and all(catches(pid, signal.SIGUSR1) for pid in jobs[-1]["task_pids"])
                and (phase == "preparation" or len(run_dirs(root)) == 1 and len(attempts(run_dirs(root)[0])) == 2)
            )

        wait_until(started, timeout_seconds=120)
        time.sleep(delay)
        for rank in ranks:
            os.kill(fake_slurm.jobs()[-1]["task_pids"][rank], signal.SIGUSR1)
        sweep_process.wait(timeout=300)  # it never hangs
    finally:
        if sweep_process.poll() is None:
            sweep_process.kill()
    assert sweep_process.returncode == 0, f"{moment}\n{log.read_text()}"
    [run_dir] = run_dirs(root)
    return run_dir, moment


@pytest.mark.slow  # two processes per attempt, each importing torch; a handful of times
@pytest.mark.parametrize("seed", range(6))
def test_usr1_at_a_random_moment_never_hangs_a_job_and_its_run_resumes_or_finishes(fake_slurm, tmp_path, seed):
    run_dir, moment = signalled_at_a_random_moment(fake_slurm, tmp_path / "runs", seed)
    result = json.loads((run_dir / RESULT_FILE).read_text())["metrics"]
    expected = reference_weights(seed=0, steps=20, world_size=2)
    torch.testing.assert_close(
        torch.tensor([result[f"weight/{index}"] for index in range(len(expected))]), expected, msg=moment
    )
    started = attempts(run_dir)
    restarts = sorted({restart for _, restart, _ in started})
    assert restarts in ([0], [0, 1]), (moment, started)  # requeued at most once, or it finished first
    if restarts == [0, 1]:
        resumed_at = {step for _, restart, step in started if restart == 1}
        assert len(resumed_at) == 1 and 0 < resumed_at.pop() < 20, (moment, started)


LIGHTNING_RUN = [
    "trainer.num_threads=1",
    *TWO_TASKS,
    "trainer.strategy=ddp",
    "trainer.accelerator=cpu",
    "trainer.max_steps=60",
    "trainer.val_every_steps=60",
]


def lightning_sweep(root: Path, log: Path) -> subprocess.Popen:
    """A slurm sweep of one run of the fixture trained by Lightning on the two tasks of its job (DDP over gloo)."""
    with open(log, "w") as output:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "experiments.sweeps.sweep",
                "sweep-fixture",
                "--scale",
                "smoke",
                "--launcher",
                "slurm",
                "--root",
                str(root),
                "--poll-seconds",
                "1",
                "--where",
                "model=xlstm_1_0",
                "--where",
                "task=parity",
                *LIGHTNING_RUN,
            ],
            cwd=REPOSITORY_ROOT,
            stdout=output,
            stderr=subprocess.STDOUT,
        )


@pytest.mark.slow  # Lightning in two processes per attempt, three sweeps
def test_a_lightning_run_signalled_at_random_moments_requeues_and_ends_as_the_uninterrupted_run(fake_slurm, tmp_path):
    """The training path itself: USR1 to one or both ranks at a random moment after the workers started (while they
    import, prepare their data, build the model or train); the run stops at a step boundary with last.ckpt, the job
    requeues and resumes from it, and its results equal those of the same run uninterrupted."""
    import random

    reference = lightning_sweep(tmp_path / "reference", tmp_path / "reference.log")
    assert reference.wait(timeout=900) == 0, (tmp_path / "reference.log").read_text()
    [reference_dir] = run_dirs(tmp_path / "reference")
    expected = json.loads((reference_dir / RESULT_FILE).read_text())["metrics"]
    for seed in range(2):
        generator = random.Random(seed)
        delay, ranks = generator.uniform(0.0, 20.0), generator.choice([[0], [1], [0, 1]])
        root, log = tmp_path / f"signalled-{seed}", tmp_path / f"signalled-{seed}.log"
        sweep_process = lightning_sweep(root, log)
        try:
            wait_until(
                lambda: (
                    len(fake_slurm.jobs()) == seed + 2  # noqa: B023 (called in this iteration)
                    and len(fake_slurm.jobs()[-1]["task_pids"]) == 2
                    and all(catches(pid, signal.SIGUSR1) for pid in fake_slurm.jobs()[-1]["task_pids"])
                )
            )
            time.sleep(delay)
            for rank in ranks:
                os.kill(fake_slurm.jobs()[-1]["task_pids"][rank], signal.SIGUSR1)
            sweep_process.wait(timeout=900)
        finally:
            if sweep_process.poll() is None:
                sweep_process.kill()
        moment = f"USR1 to ranks {ranks} {delay:.1f} s after the workers started"
        assert sweep_process.returncode == 0, f"{moment}\n{log.read_text()}"
        [run_dir] = run_dirs(root)
        metrics = json.loads((run_dir / RESULT_FILE).read_text())["metrics"]
        for name, value in expected.items():
            if not name.endswith("seconds"):
                assert metrics[name] == pytest.approx(value, rel=1e-5, abs=1e-6), (moment, name)
        restarts = fake_slurm.jobs()[-1]["restart_count"]
        assert restarts == 1 or "resuming" not in (run_dir / "output.log").read_text(), moment
        if restarts:
            assert "resuming " in (run_dir / "output.log").read_text(), moment
