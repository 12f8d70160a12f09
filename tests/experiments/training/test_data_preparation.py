"""Tokenisation as a step of its own: `xlstm-suite prepare` makes a sweep's token caches once; processes that open an
entry together write it once, under its lock; the processes of one SLURM job attempt check its checksum once."""

import io
import os
import subprocess
import sys
import textwrap

import pytest
from rich.console import Console

from experiments.config.artifacts import load_artifact
from experiments.paths import REPOSITORY_ROOT
from tasks.lm import token_cache
from tasks.lm.token_cache import cached_tokens

TEXTS = [f"Document {index}: " + " ".join(f"word{index * 7 + word}" for word in range(2000)) for index in range(100)]

OPEN_ENTRY = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from tasks.lm.token_cache import cached_tokens

    TEXTS = [f"Document {index}: " + " ".join(f"word{index * 7 + word}" for word in range(2000)) for index in range(100)]
    go = Path(sys.argv[1])
    while not go.exists():
        time.sleep(0.01)
    print(len(cached_tokens({"test": "shared"}, [TEXTS], "gpt2", None)))
""")


def test_processes_that_open_a_missing_entry_together_tokenise_it_once(tmp_path):
    """Each node's first process tokenised the same entry at once, with no lock between the writers."""
    environment = {"XLSTM_SUITE_DATA_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(REPOSITORY_ROOT)}
    go = tmp_path / "go"
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", OPEN_ENTRY, str(go)],
            cwd=REPOSITORY_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=os.environ | environment,
        )
        for _ in range(2)
    ]
    go.touch()
    outputs = [process.communicate(timeout=300) for process in processes]
    assert [process.returncode for process in processes] == [0, 0], outputs
    assert outputs[0][0] == outputs[1][0] and int(outputs[0][0]) > 100 * 2000
    assert sum(stderr.count("tokenised ") for _, stderr in outputs) == 1, outputs


def test_the_processes_of_a_slurm_job_attempt_check_an_entry_once(tmp_path, monkeypatch):
    """Every rank hashed the whole stream at every start; now the first process of a job attempt does, and records
    it for the stream as it is: the job's others only open it, a new attempt or a changed stream is checked again."""
    monkeypatch.setenv("XLSTM_SUITE_DATA_CACHE", str(tmp_path))
    checks = []
    entry_problem = token_cache.entry_problem
    monkeypatch.setattr(token_cache, "entry_problem", lambda *arguments: checks.append(1) or entry_problem(*arguments))
    texts = TEXTS[:3]
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    expected = cached_tokens({"test": "once"}, [texts], "gpt2", None).tolist()  # written, nothing to check
    for _ in range(3):  # the job's other processes
        assert cached_tokens({"test": "once"}, [texts], "gpt2", None).tolist() == expected
    assert len(checks) == 0
    monkeypatch.setenv("SLURM_RESTART_COUNT", "1")  # the job requeued
    for _ in range(2):
        cached_tokens({"test": "once"}, [texts], "gpt2", None)
    assert len(checks) == 1
    [stream] = tmp_path.glob("lm/*.tokens")
    data = bytearray(stream.read_bytes())
    data[0] ^= 1  # the same size, other bytes: another stream than the one checked
    stream.write_bytes(bytes(data))
    assert cached_tokens({"test": "once"}, [texts], "gpt2", None).tolist() == expected  # checked, damaged, rebuilt
    assert len(checks) == 2
    monkeypatch.delenv("SLURM_JOB_ID")  # outside SLURM every process checks
    for _ in range(2):
        cached_tokens({"test": "once"}, [texts], "gpt2", None)
    assert len(checks) == 4


@pytest.mark.slow  # plans the artifact and tokenises the sample corpus
def test_prepare_makes_the_token_caches_of_an_artifacts_runs_once(tmp_path, monkeypatch, capsys):
    from experiments.training.data_preparation import prepare_data

    monkeypatch.setenv("XLSTM_SUITE_DATA_CACHE", str(tmp_path))
    runs = load_artifact("spaj15b_model_results").runs("smoke")
    console = Console(file=io.StringIO(), width=200)
    assert prepare_data(runs, console) == 1  # two models, one corpus
    assert len(list(tmp_path.glob("lm/*.tokens"))) == 3 and len(list(tmp_path.glob("lm/*.json"))) == 3
    assert capsys.readouterr().err.count("tokenised offline:sample") == 3  # training, validation, test
    prepare_data(runs, console)
    assert "tokenised" not in capsys.readouterr().err
    assert "prepared the data of task lm_sample (lm, corpus offline:sample) of 2 runs" in console.file.getvalue()


@pytest.mark.slow  # the command line imports Lightning
def test_the_prepare_command_runs_at_smoke_scale_on_the_sample_corpus(tmp_path):
    finished = subprocess.run(
        [sys.executable, "-m", "experiments.cli", "prepare", "spaj15b_model_results", "--scale", "smoke"],
        cwd=REPOSITORY_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env=os.environ | {"XLSTM_SUITE_DATA_CACHE": str(tmp_path)},
    )
    assert finished.returncode == 0, finished.stderr
    assert "1 task configs of 2 runs prepared" in finished.stdout and len(list(tmp_path.glob("lm/*.tokens"))) == 3
