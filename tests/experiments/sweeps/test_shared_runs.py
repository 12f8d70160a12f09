"""Runs shared between artifacts (``shares_runs``): a finished run of the same computation is copied, not trained
again, and the copy reads as this artifact's finished run."""

import dataclasses
import io

import pytest
from rich.console import Console

from experiments.config.artifacts import artifact_from_yaml, load_artifact
from experiments.sweeps.run_store import finished_result, read_cell, store_frame
from experiments.sweeps.shared_runs import COPIED_FROM, computation_id
from experiments.sweeps.sweep import run_sweep
from tests.sweep_fakes import EXECUTIONS, RECORD_RUN, count_lines, small_artifact

NO_TORCH = "trainer.num_threads=null"


def sharing_artifact(models: list[str]):
    """An artifact beside the fixture (another name) whose smoke grid overlaps the fixture's, sharing its runs."""
    return dataclasses.replace(small_artifact(models), name="sweep-fixture-sharing", shares_runs=["sweep-fixture"])


def swept(artifact, root, dry_run: bool = False) -> str:
    console = Console(file=io.StringIO(), width=250)
    code = run_sweep(artifact, "smoke", jobs=1, dry_run=dry_run, overrides=[NO_TORCH], run_function=RECORD_RUN,
                     root=root, console=console)  # fmt: skip
    assert code == 0
    return console.file.getvalue()


def test_a_finished_run_of_the_same_computation_is_copied_and_reads_as_this_artifacts_run(tmp_path):
    swept(small_artifact(["xlstm_1_0"]), tmp_path)
    (original,) = (tmp_path / "smoke" / "sweep-fixture").iterdir()

    output = swept(sharing_artifact(["xlstm_1_0", "xlstm_0_1"]), tmp_path)

    assert "1 run was copied from the finished runs of sweep-fixture" in output
    store = tmp_path / "smoke" / "sweep-fixture-sharing"
    copies = [run for run in store.iterdir() if (finished_result(run) or {}).get(COPIED_FROM)]
    trained = [run for run in store.iterdir() if run not in copies]
    assert len(copies) == 1 and len(trained) == 1
    (copy,) = copies
    result = finished_result(copy)
    assert result[COPIED_FROM] == f"sweep-fixture/{original.name}"
    assert result["artifact"] == "sweep-fixture-sharing" and result["run_id"] == copy.name != original.name
    assert result["metrics"] == finished_result(original)["metrics"]
    assert read_cell(copy)["cell"]["model"] == "xlstm_1_0" and read_cell(copy)["artifact"] == "sweep-fixture-sharing"
    assert "artifact: sweep-fixture-sharing" in (copy / "config.yaml").read_text()
    assert count_lines(copy / EXECUTIONS) == 1  # the original's one execution, none more
    assert count_lines(trained[0] / EXECUTIONS) == 1
    frame = store_frame(tmp_path, "smoke", "sweep-fixture-sharing")
    assert sorted(frame["status"]) == ["done", "done"]
    assert not list(store.glob(".*copying*"))


def test_a_dry_run_says_what_it_would_copy_and_copies_nothing(tmp_path):
    swept(small_artifact(["xlstm_1_0"]), tmp_path)
    output = swept(sharing_artifact(["xlstm_1_0"]), tmp_path, dry_run=True)
    assert "1 run would be copied from the finished runs of sweep-fixture" in output
    assert not (tmp_path / "smoke" / "sweep-fixture-sharing").exists()


def test_a_run_started_here_is_not_replaced_by_a_copy(tmp_path):
    swept(small_artifact(["xlstm_1_0"]), tmp_path)
    sharing = sharing_artifact(["xlstm_1_0"])
    (run,) = sharing.runs("smoke", [NO_TORCH])
    started = tmp_path / "smoke" / "sweep-fixture-sharing" / run.run_id
    started.mkdir(parents=True)
    output = swept(sharing, tmp_path)
    assert "copied" not in output
    assert COPIED_FROM not in finished_result(started) and count_lines(started / EXECUTIONS) == 1


def test_unknown_shared_artifacts_are_refused_with_the_choices(tmp_path):
    path = tmp_path / "sharing.yaml"
    path.write_text("artifact: sharing\nshares_runs: [nope]\ngrid: {model: [llama]}\n")
    with pytest.raises(ValueError, match=r"shares_runs: unknown artifacts \['nope'\]; valid choices: \[.*'mqar-main'"):
        artifact_from_yaml(path)
    path.write_text("artifact: sharing\nshares_runs: mqar-main\ngrid: {model: [llama]}\n")
    with pytest.raises(ValueError, match="shares_runs: must be a list of artifact names, got 'mqar-main'"):
        artifact_from_yaml(path)


def test_mqar_app_big_mini_shares_its_context_length_64_row_with_mqar_mains_mini_runs():
    main = {computation_id(run) for run in load_artifact("mqar-main").runs("mini", [])}
    big = load_artifact("mqar-app-big").runs("mini", [])
    shared = [run for run in big if computation_id(run) in main]
    assert len(main) == 72 and len(shared) == 72
    assert {run.cell["task.context_length"] for run in shared} == {64}
    assert all(run.cell["task.context_length"] == 32 for run in big if run not in shared)
