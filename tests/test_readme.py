"""Every command and Python example of README.md runs, as written, in a throw-away copy of the repository.

Commands run in groups, one per artifact (and ablation) they name, each in a repository copy of its own and in the
order the README gives them, so a report finds the runs of the sweep before it. Three changes
keep them within the test budget, and only these: mini scale runs at smoke scale, a sweep that names the paper
scale or SLURM, or a paper-scale ``prepare`` (the hub's corpus), gets ``--dry-run``, and a ``train`` run gets the smoke
budget. The long ones (the benchmarks, the slow suite) run in a ``slow`` test; ``make test`` is CI's own command.
"""

import re
import sys
from pathlib import Path

import pytest

from tests.repository_copy import REPOSITORY_ROOT, copy_repository, environment, run_in

README = REPOSITORY_ROOT / "README.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`([^`\n]+)`")
COMMAND_START = re.compile(r"^(make|\.venv/bin/xlstm-suite|xlstm-suite)( |$)")
INLINE_COMMAND = re.compile(r"^(make|\.venv/bin/xlstm-suite|xlstm-suite) ")  # the program's name alone is no command
SMOKE_TRAINING = (
    "trainer.max_steps=10 trainer.batch_size=8 trainer.val_every_steps=10 model.embedding_dim=16 "
    "task.val_samples=16 task.test_samples=16 task.eval_max_length=64"
)
# Run by the slow test below, not the default one (minutes each).
SLOW_COMMANDS = {"make bench": "make bench BENCH_FLAGS=--quick"}
# Not run by a test of this suite, with the reason; `make -n` checks that the target exists.
NOT_RUN_HERE = {
    "make test": "the suite itself: CI runs it on a clean clone (.ci/run), and this test is part of it",
    "make test-slow": "the slow suite, which includes this file's slow test",
    "make install-gpu": "installs into the environment of a CUDA machine's torch (GPU_PYTHON), not this one",
    "make install-mamba": "compiles CUDA kernels: needs nvcc and a CUDA torch",
    "make test-gpu": "needs a CUDA device (without one every test is skipped); run on a lent GPU",
    "make bench-gpu": "needs a CUDA device (without one it exits with one line); run on a lent GPU",
}


def fenced(language: str) -> list[str]:
    return [body for fence_language, body in FENCE.findall(README.read_text()) if fence_language == language]


def readme_commands() -> list[str]:
    """The shell commands of the README's bash blocks, in order, without their comments."""
    commands = []
    for block in fenced("bash"):
        for line in block.splitlines():
            command = line.split(" #", 1)[0].strip()
            if command and not command.startswith("#"):
                commands.append(command)
    return commands


def inline_commands() -> list[str]:
    """Commands quoted in the README's prose (outside code blocks)."""
    prose = FENCE.sub("", README.read_text())
    return [span for span in INLINE_CODE.findall(prose) if INLINE_COMMAND.match(span)]


def as_tested(command: str) -> str:
    """The command as this test runs it: smoke instead of mini, --dry-run for a sweep or prepare at paper scale or
    on SLURM, a smoke budget for a train run."""
    tested = command.replace("--scale mini", "--scale smoke").replace("SCALE=mini", "SCALE=smoke")
    if (
        re.match(r"^\.venv/bin/xlstm-suite (sweep|prepare)\b", tested)
        and ("--scale paper" in tested or "--launcher slurm" in tested)
        and "--dry-run" not in tested
    ):
        tested += " --dry-run"
    if re.match(r"^\.venv/bin/xlstm-suite train\b", tested):
        tested += f" {SMOKE_TRAINING}"
    return tested


def user_environment(copy: Path) -> dict[str, str]:
    """What a user has: no test fixture artifacts, the compose cache on. It is the test session's (tests/conftest.py),
    shared with the other tests and groups as a user's own cache is shared by the commands they run: its entries are
    keyed by the content of every config file, so a shared entry is the compose a cold cache would make."""
    variables = environment(copy, COLUMNS="100")
    variables.pop("XLSTM_SUITE_ARTIFACTS", None)
    return variables


@pytest.fixture(scope="module")
def repository(tmp_path_factory):
    return copy_repository(tmp_path_factory.mktemp("readme"))


def test_the_readme_holds_the_three_jobs_and_every_command_is_accounted_for():
    commands = readme_commands()
    assert any(" sweep " in command for command in commands)
    assert any(" report " in command for command in commands)
    assert any(command.endswith(" list") for command in commands)
    assert any(command.startswith("make reproduce") for command in commands)
    for command in commands:  # run as written by an executable of the repository, from its root
        assert COMMAND_START.match(command) and not command.startswith("xlstm-suite"), command
    assert set(inline_commands()) <= set(commands), "a command quoted in the prose must be in a code block"
    assert set(NOT_RUN_HERE) | set(SLOW_COMMANDS) <= set(commands)


def test_ci_runs_the_readme_test_command():
    assert "make test" in (REPOSITORY_ROOT / ".ci" / "run").read_text().splitlines()


ARTIFACT_NAMED = re.compile(r"(?:ARTIFACT=|xlstm-suite (?:sweep|report|prepare|status) )(?!all\b)([\w-]+)")
PLACEMENT_OVERRIDE = re.compile(r"^\+?(hydra|trainer)\.")  # where a run runs, not what it computes


def group_key(command: str) -> str | None:
    """The artifact a command names and the overrides that change what it computes (an ablation's sweep and its
    report share a key), or None for a command that names no artifact."""
    named = ARTIFACT_NAMED.search(command)
    if named is None:
        return None
    overrides = [
        word
        for word in command.split()
        if "=" in word and not word.startswith(("-", "ARTIFACT=", "SCALE=")) and not PLACEMENT_OVERRIDE.match(word)
    ]
    return " ".join([named.group(1), *overrides])


def command_groups() -> dict[str, list[str]]:
    """The README's commands in independent groups, each run in a repository copy of its own (in parallel under
    xdist): by the artifact and computing overrides they name, in the README's order within a group (a report after
    its sweep); a command that names none (make corpus, list, train) joins the next group that names one, which it
    prepares or which runs after it in the README, and the commands after the last such group join that one."""
    groups: dict[str, list[str]] = {}
    waiting: list[str] = []
    for command in readme_commands():
        waiting.append(command)
        key = group_key(command)
        if key is not None:
            groups.setdefault(key, []).extend(waiting)
            waiting = []
    groups[list(groups)[-1]].extend(waiting)
    return groups


def test_commands_fall_into_groups_that_keep_their_order_and_cover_the_readme():
    groups = command_groups()
    assert sorted(command for commands in groups.values() for command in commands) == sorted(readme_commands())
    sweep_of_the_ablation = next(key for key in groups if key.startswith("formal-main model."))
    assert [command.split()[1] for command in groups[sweep_of_the_ablation]] == ["sweep", "report"]
    assert group_key("make corpus") is None and group_key(".venv/bin/xlstm-suite report all --scale smoke") is None


@pytest.mark.parametrize("group", list(command_groups()))
def test_every_readme_command_runs(group, tmp_path):
    repository = copy_repository(tmp_path / "repository")
    env = user_environment(repository)
    failures = []
    for command in command_groups()[group]:
        if command in NOT_RUN_HERE:
            tested = f"make -n {command.split()[1]}"
        elif command in SLOW_COMMANDS:
            continue
        else:
            tested = as_tested(command)
        finished = run_in(repository, tested, env)
        print(f"$ {tested}  # exit {finished.returncode}, {finished.seconds:.1f} s")
        if finished.returncode != 0 or "Traceback" in finished.output:
            failures.append(f"$ {tested}\n(exit {finished.returncode})\n{finished.output[-3000:]}")
    assert not failures, "\n\n".join(failures)
    reports = repository / "results" / "reports" / "smoke"
    if group == "formal-main":
        assert (reports / "formal-main.md").exists() and (reports / "formal-main.runs.csv").exists()
    if group.startswith("formal-main model."):
        assert len(list(reports.glob("formal-main-*.md"))) == 1  # the ablation's report, under a name of its own


@pytest.mark.parametrize("index", range(len(fenced("python"))))
def test_every_readme_python_example_runs(repository, index):
    example = repository / f"readme_example_{index}.py"
    example.write_text(fenced("python")[index])
    finished = run_in(repository, f"{sys.executable} {example.name}")
    assert finished.returncode == 0, finished.output


@pytest.mark.slow
@pytest.mark.parametrize("command", sorted(SLOW_COMMANDS))
def test_every_long_readme_command_runs(repository, command):
    finished = run_in(repository, SLOW_COMMANDS[command], user_environment(repository), timeout=3600)
    assert finished.returncode == 0, finished.output[-3000:]
