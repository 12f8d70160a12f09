"""spaj300B_seq_extrapolation: the context_extrapolation evaluation kind on temp_sclaw300B's runs. Planning (the
1.3B runs at paper scale, each training run's id recomputed from its evaluation run's config), bad settings refused
when the artifact loads, the CPU peak-memory measure against tensors of known size, and end to end at smoke scale:
perplexity and peak memory per length, the training context's perplexity equal to the training run's own
validation perplexity, the recurrent model's memory flat in the length and Llama's growing."""

import json

import pandas as pd
import pytest
import torch

from experiments.config.artifacts import load_artifact, run_id_of
from experiments.evaluation.peak_memory import peak_memory_bytes
from experiments.sweeps.sweep import run_sweep
from tests.test_paloma_runs import artifacts, training_config_of  # noqa: F401 (artifacts: a fixture)

TRAINING, ARTIFACT = "temp_sclaw300B", "spaj300B_seq_extrapolation"


@pytest.mark.parametrize("scale, cells", [
    ("paper", {("rwkv4", "1.3b"), ("llama", "1.3b"), ("mamba", "1.3b"), ("xlstm_1_0", "1.3b"), ("xlstm_7_1", "1.3b")}),
    ("smoke", {("llama", 32), ("xlstm_1_0", 32)}),
])
def test_the_largest_models_are_evaluated_once_each_and_their_training_run_ids_recomputed(scale, cells):
    size = "model.size" if scale == "paper" else "model.embedding_dim"
    training = {run.run_id: run for run in load_artifact(TRAINING).runs(scale)}
    runs = load_artifact(ARTIFACT).runs(scale)
    assert {(run.cell["model"], run.cell[size]) for run in runs} == cells and len(runs) == len(cells)
    for run in runs:
        trained = training[run.trained_by.run_id]
        assert run.cell == trained.cell
        assert run.config.evaluate.kind == "context_extrapolation" and run.config.evaluate.checkpoint == "last"
        assert run_id_of(training_config_of(run.config)) == trained.run_id == run.config.evaluate.run_id
    settings = runs[0].config.evaluate.settings
    if scale == "paper":  # trained at 2048, "tested for context lengths up to 16384"
        assert runs[0].config.task.context_length == 2048
        assert (settings.context_lengths[0], settings.context_lengths[-1]) == (2048, 16384)
        assert (settings.chunk, settings.precision) == (2048, "bf16-mixed")
    else:
        assert list(settings.context_lengths) == [16, 32, 64] and runs[0].config.task.context_length == 16


@pytest.mark.parametrize("settings, message", [
    ("{context_lengths: []}", "context_lengths=[] names no length to score"),
    ("{context_lengths: [16, 0]}", "context_lengths: 0 must be a whole number >= 1"),
    ("{context_lengths: [16, 16]}", "context_lengths=[16, 16] names a length twice"),
    ("{chunk: 0}", "evaluates.settings.chunk=0 must be >= 1"),
    ("{sequences: 0}", "evaluates.settings.sequences=0 must be >= 1"),
    ("{precision: fp16}", "evaluates.settings.precision='fp16' is not valid; valid choices: ['bf16-mixed', '32-true']"),
    ("{chunks: 8}", "unknown key evaluates.settings.chunks; did you mean evaluates.settings.chunk?"),
])
def test_a_bad_setting_is_named_with_its_valid_values_when_the_artifact_loads(artifacts, settings, message):
    (artifacts / "probe.yaml").write_text(
        f"artifact: probe\nevaluates: {{artifact: {TRAINING}, kind: context_extrapolation, settings: {settings}}}\n"
        "selection: {metric: extrapolation/ppl_longest, mode: min, choose: [], average: [seed]}\n"
        "report: {kind: table, cells: [model], metric: extrapolation/ppl_longest}\n")
    with pytest.raises(ValueError) as error:
        load_artifact("probe")
    assert message in str(error.value)


def test_the_cpu_peak_is_the_most_tensor_bytes_alive_at_once():
    weight = torch.randn(256, 256)

    def three_alive(rows: int) -> None:
        inputs = torch.randn(rows, 256)
        product = inputs @ weight
        product.relu().sum()  # inputs, product and its relu alive together: 3 x rows x 256 floats

    for rows in (100, 1000):
        _, peak = peak_memory_bytes(lambda: three_alive(rows), torch.device("cpu"))
        assert peak == pytest.approx(3 * rows * 256 * 4, rel=0.01)


@pytest.mark.slow  # trains the four smoke runs of temp_sclaw300B, then scores two of them (about 80 s)
def test_smoke_scale_writes_perplexity_and_memory_per_length_and_reports_them(tmp_path):
    from experiments.reports.report import write_report

    root, reports = tmp_path / "runs", tmp_path / "reports"
    assert run_sweep(TRAINING, "smoke", jobs=1, root=root) == 0
    assert run_sweep(ARTIFACT, "smoke", jobs=1, root=root) == 0
    for run in load_artifact(ARTIFACT).runs("smoke"):
        folder = root / "smoke" / ARTIFACT / run.run_id
        metrics = json.loads((folder / "result.json").read_text())["metrics"]
        scores = pd.read_csv(folder / "extrapolation.csv").set_index("context_length")
        assert list(scores.index) == [16, 32, 64] and (scores["tokens"] == [64, 128, 256]).all()
        for length in (16, 32, 64):
            assert metrics[f"extrapolation/ppl@{length}"] == pytest.approx(scores.loc[length, "perplexity"])
            assert metrics[f"extrapolation/memory_mib@{length}"] > 0
        # at the training context (16) the same 4 validation sequences as the training run's own validation
        assert metrics["extrapolation/ppl@16"] == pytest.approx(metrics["trained/val/perplexity"], rel=1e-4)
        memory = scores["peak_memory_mib"]
        if run.cell["model"] == "llama":  # one pass over the whole sequence: (B, L, V) logits and more
            assert metrics["extrapolation/chunked"] == 0 and memory[64] > 1.8 * memory[32] > 3.2 * memory[16]
        else:  # chunks of 16 with the state carried: no more memory at 64 than at 32
            assert metrics["extrapolation/chunked"] == 1 and memory[64] == pytest.approx(memory[32], rel=0.01)
    assert write_report(ARTIFACT, "smoke", root, reports).status == "written"
    table = pd.read_csv(reports / "smoke" / f"{ARTIFACT}.csv")
    assert len(table) == 2 and table["ours"].notna().all()
    assert table["paper"].isna().all()  # the paper's 16k numbers are the 1.3B models', not the stand-in sizes'
