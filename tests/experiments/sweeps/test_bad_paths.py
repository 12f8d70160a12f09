"""A bad --root or --destination (a file, a symbolic link loop, a folder that cannot be read) or a bad artifact file
(not YAML, not a mapping, not a file) is one line naming the path and the problem, exit code 2, before anything
runs or is written; `list` still lists the good artifacts and marks the bad one."""

import os
from pathlib import Path

import pytest

from experiments import paths
from experiments.cli import main as cli_main
from experiments.sweeps.sweep import main as sweep_main
from tests.sweep_fakes import RECORD_RUN

SWEEP = ["sweep", "sweep-fixture", "--scale", "smoke", "--run-function", RECORD_RUN]
LIST = ["list", "sweep-fixture", "--scale", "smoke"]
REPORT = ["report", "sweep-fixture", "--scale", "smoke"]
TRAIN = ["train", "model=xlstm_1_0", "task=parity"]


def a_file(tmp_path: Path) -> Path:
    path = tmp_path / "a-file"
    path.write_text("not a folder")
    return path


def a_link_loop(tmp_path: Path) -> Path:
    (tmp_path / "loop-a").symlink_to(tmp_path / "loop-b")
    (tmp_path / "loop-b").symlink_to(tmp_path / "loop-a")
    return tmp_path / "loop-a"


def an_unreadable_folder(tmp_path: Path, monkeypatch) -> Path:
    path = tmp_path / "locked"
    path.mkdir(mode=0)
    if os.geteuid() == 0:  # root reads any folder: the permission check is told what it would say to a user
        monkeypatch.setattr(paths.os, "access", lambda checked, mode: Path(checked) != path)
    return path


BAD_FOLDERS = {  # how to make it (in tmp_path, with monkeypatch), what the line says
    "a file": (lambda tmp_path, _: a_file(tmp_path), "is a file, not a folder"),
    "a symbolic link loop": (
        lambda tmp_path, _: a_link_loop(tmp_path),
        "is a symbolic link loop (Too many levels of symbolic links)",
    ),
    "a folder below a file": (lambda tmp_path, _: a_file(tmp_path) / "runs", "lies below a file (Not a directory)"),
    "unreadable": (an_unreadable_folder, "cannot be read (Permission denied)"),
}


def one_error_line(capsys, command: str) -> str:
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    [line] = captured.err.splitlines()
    assert line.startswith(f"xlstm-suite {command}: error: ")
    return line


@pytest.mark.parametrize("command", [SWEEP, LIST, REPORT, TRAIN], ids=lambda command: command[0])
@pytest.mark.parametrize("bad", BAD_FOLDERS, ids=BAD_FOLDERS)
def test_a_bad_root_is_one_line_naming_it_and_exit_code_2(tmp_path, capsys, monkeypatch, command, bad):
    make, problem = BAD_FOLDERS[bad]
    root = make(tmp_path, monkeypatch)
    assert cli_main([*command, "--root", str(root)]) == 2
    assert one_error_line(capsys, command[0]).endswith(f"--root {root} {problem}")


@pytest.mark.parametrize("bad", BAD_FOLDERS, ids=BAD_FOLDERS)
def test_a_bad_report_destination_is_one_line_naming_it_and_exit_code_2(tmp_path, capsys, monkeypatch, bad):
    make, problem = BAD_FOLDERS[bad]
    destination = make(tmp_path, monkeypatch)
    assert cli_main([*REPORT, "--root", str(tmp_path / "runs"), "--destination", str(destination)]) == 2
    assert one_error_line(capsys, "report").endswith(f"--destination {destination} {problem}")


def test_the_sweep_module_names_a_bad_root_too(tmp_path, capsys):
    root = a_file(tmp_path)
    assert sweep_main(SWEEP[1:] + ["--root", str(root)]) == 2
    assert one_error_line(capsys, "sweep").endswith(f"--root {root} is a file, not a folder")


BAD_ARTIFACTS = {  # the file's content, what the line says
    "not YAML": (
        "artifact: broken\ngrid: [a, b\n",
        "not valid YAML: expected ',' or ']', but got '<stream end>' (line 3, column 1)",
    ),
    "a list": ("- artifact: broken\n", "holds a list, not a mapping of artifact keys"),
    "not text": (b"\xff\xfe\x00", "not UTF-8 text (invalid start byte at byte 0)"),
}


@pytest.fixture(
    params=[
        name if name == "not YAML" else pytest.param(name, marks=pytest.mark.slow)  # plans for list
        for name in BAD_ARTIFACTS
    ],
    ids=list(BAD_ARTIFACTS),
)
def broken_artifact(request, artifact_folder) -> tuple[Path, str]:
    content, problem = BAD_ARTIFACTS[request.param]
    path = artifact_folder / "broken.yaml"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path, problem


@pytest.mark.parametrize("command", [SWEEP, REPORT], ids=lambda command: command[0])
def test_a_bad_artifact_file_is_one_line_naming_it_and_exit_code_2(tmp_path, capsys, broken_artifact, command):
    path, problem = broken_artifact
    assert cli_main([command[0], "broken", *command[2:], "--root", str(tmp_path / "runs")]) == 2
    assert one_error_line(capsys, command[0]).endswith(f"error: {path}: {problem}")
    assert not (tmp_path / "runs").exists()


def test_list_lists_the_good_artifacts_marks_the_bad_one_and_exits_2(tmp_path, capsys, broken_artifact):
    path, problem = broken_artifact
    assert cli_main(["list", "sweep-fixture", "broken", "--scale", "smoke", "--root", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    rows = [line.split() for line in captured.out.splitlines() if line.split()[:1] in (["sweep-fixture"], ["broken"])]
    assert rows[0][:4] == ["sweep-fixture", "smoke", "6", "0"] and rows[1][:2] == ["broken", "bad"]
    assert "".join(f"bad artifact file: {path}: {problem}".split()) in "".join(captured.out.split())  # folded
    assert captured.err == f"xlstm-suite list: error: {path}: {problem}\n"
