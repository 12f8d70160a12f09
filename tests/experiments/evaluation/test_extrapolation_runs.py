"""spaj300B_seq_extrapolation: the context_extrapolation evaluation kind on temp_sclaw300B's runs. Planning (the
1.3B runs at paper scale at each length, each training run's id recomputed from its evaluation run's config at the
training length), bad settings refused
when the artifact loads, the CPU peak-memory measure against tensors of known size, and end to end at smoke scale:
perplexity and peak memory per length, the training context's perplexity equal to the training run's own
validation perplexity, the recurrent model's memory flat in the length and Llama's growing."""

import json

import pandas as pd
import pytest
import torch

from experiments.config.artifacts import load_artifact, run_id_of
from experiments.config.configuration import ConfigError
from experiments.evaluation.extrapolation_run import validation_sequences
from experiments.evaluation.peak_memory import peak_memory_bytes
from experiments.sweeps.sweep import run_sweep
from tests.evaluation_probe import load_error
from tests.experiments.sweeps.test_paloma_runs import training_config_of

TRAINING, ARTIFACT = "temp_sclaw300B", "spaj300B_seq_extrapolation"


@pytest.mark.parametrize(
    "scale, models, lengths",
    [
        (
            "paper",
            {("rwkv4", "1.3b"), ("llama", "1.3b"), ("mamba", "1.3b"), ("xlstm_1_0", "1.3b"), ("xlstm_7_1", "1.3b")},
            [2048, 4096, 8192, 16384],
        ),
        ("smoke", {("llama", 32), ("xlstm_1_0", 32)}, [16, 32, 64]),
    ],
)
def test_the_largest_models_are_evaluated_at_each_length_and_their_training_run_ids_recomputed(scale, models, lengths):
    size = "model.size" if scale == "paper" else "model.embedding_dim"
    training = {run.run_id: run for run in load_artifact(TRAINING).runs(scale)}
    runs = load_artifact(ARTIFACT).runs(scale)
    assert sorted((run.cell["model"], run.cell[size], run.config.task.context_length) for run in runs) == sorted(
        (model, model_size, length) for model, model_size in models for length in lengths
    )
    for run in runs:
        trained = training[run.trained_by.run_id]
        assert run.cell == trained.cell | {"task.context_length": run.config.task.context_length}
        assert trained.config.task.context_length == lengths[0]  # trained at the shortest length scored
        assert run.config.evaluate.kind == "context_extrapolation" and run.config.evaluate.checkpoint == "last"
        assert run.config.evaluate.run_id == trained.run_id
        # its config less the evaluate section is the training run's when the length is the training one
        same = run.config.task.context_length == lengths[0]
        assert (run_id_of(training_config_of(run.config)) == trained.run_id) is same
    if scale == "paper":  # the training context as chunk, bfloat16 mixed precision as the paper's evaluations
        assert (runs[0].config.evaluate.settings.chunk, runs[0].config.evaluate.settings.precision) == (
            2048,
            "bf16-mixed",
        )


@pytest.mark.parametrize(
    "settings, message",
    [
        ("{batch_size: 0}", "evaluates.settings.batch_size=0 must be >= 1"),
        ("{chunk: 0}", "evaluates.settings.chunk=0 must be >= 1"),
        ("{tokens: 0}", "evaluates.settings.tokens=0 must be >= 1"),
        (
            "{precision: fp16}",
            "evaluates.settings.precision='fp16' is not valid; valid choices: ['bf16-mixed', '32-true']",
        ),
        ("{chunks: 8}", "unknown key evaluates.settings.chunks; did you mean evaluates.settings.chunk?"),
    ],
)
def test_a_bad_setting_is_named_with_its_valid_values_when_the_artifact_loads(artifact_folder, settings, message):
    assert message in load_error(artifact_folder, "context_extrapolation", settings, "extrapolation/perplexity")


def test_tokens_that_no_length_divides_are_named_when_the_runs_are_planned(artifact_folder):
    (artifact_folder / "uneven.yaml").write_text(
        "artifact: uneven\nevaluates: {artifact: temp_sclaw300B, where: {model.embedding_dim: 32}, "
        "kind: context_extrapolation, settings: {tokens: 96}}\ngrid: {task.context_length: [16, 64]}\n"
        "selection: {metric: extrapolation/perplexity, mode: min, choose: [], average: [seed]}\n"
        "report: {kind: table, cells: [model], metric: extrapolation/perplexity}\nscales: {smoke: {}}\n"
    )
    with pytest.raises(
        ConfigError,
        match=r"evaluates.settings.tokens=96 must be a multiple of "
        r"task.context_length=64: every length scores the same tokens",
    ):
        load_artifact("uneven").runs("smoke")


def test_every_length_scores_the_same_tokens():
    runs = {
        run.config.task.context_length: run
        for run in load_artifact(ARTIFACT).runs("smoke")
        if run.cell["model"] == "llama"
    }
    targets = {length: validation_sequences(run.config, 64 // length)[1] for length, run in runs.items()}
    assert {tuple(values.shape) for values in targets.values()} == {(4, 16), (2, 32), (1, 64)}
    assert all(torch.equal(values.flatten(), targets[16].flatten()) for values in targets.values())


def test_the_cpu_peak_is_the_most_tensor_bytes_alive_at_once():
    weight = torch.randn(256, 256)

    def three_alive(rows: int) -> None:
        inputs = torch.randn(rows, 256)
        product = inputs @ weight
        product.relu().sum()  # inputs, product and its relu alive together: 3 x rows x 256 floats

    for rows in (100, 1000):
        _, peak = peak_memory_bytes(lambda: three_alive(rows), torch.device("cpu"))  # noqa: B023 (called in this iteration)
        assert peak == pytest.approx(3 * rows * 256 * 4, rel=0.01)


@pytest.mark.slow  # trains the four smoke runs of temp_sclaw300B, then scores two of them (about 2.5 minutes)
def test_smoke_scale_writes_perplexity_and_memory_per_length_and_reports_them(tmp_path):
    from experiments.reports.report import write_report

    root, reports = tmp_path / "runs", tmp_path / "reports"
    assert run_sweep(TRAINING, "smoke", jobs=1, root=root) == 0
    assert run_sweep(ARTIFACT, "smoke", jobs=1, root=root) == 0
    memory, perplexity = {}, {}
    for run in load_artifact(ARTIFACT).runs("smoke"):
        metrics = json.loads((root / "smoke" / ARTIFACT / run.run_id / "result.json").read_text())["metrics"]
        model, length = run.cell["model"], run.config.task.context_length
        assert metrics["extrapolation/tokens"] == 64 and metrics["train/steps"] == 0  # the same 64 at each length
        assert metrics["extrapolation/chunked"] == (model != "llama")
        memory[model, length], perplexity[model, length] = (
            metrics["extrapolation/memory_mib"],
            metrics["extrapolation/perplexity"],
        )
        if length == 16:  # at the training context, the training run's own 4 validation sequences
            assert perplexity[model, length] == pytest.approx(metrics["trained/val/perplexity"], rel=1e-4)
    # Llama in one pass: its (B, L, V) logits and more; xLSTM in chunks of 16, state carried: flat from 32 on
    assert memory["llama", 64] > 1.8 * memory["llama", 32] > 3.2 * memory["llama", 16]
    assert memory["xlstm_1_0", 64] == pytest.approx(memory["xlstm_1_0", 32], rel=0.01)
    assert all(1 < value < 1e6 for value in perplexity.values())
    assert write_report(ARTIFACT, "smoke", root, reports).status == "written"
    table = pd.read_csv(reports / "smoke" / f"{ARTIFACT}.csv")
    assert len(table) == 6 and table["ours"].notna().all()
    assert table["paper"].isna().all()  # the paper's 16k numbers are the 1.3B models', not the stand-in sizes'
