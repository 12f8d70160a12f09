"""Evaluation runs of an evaluation kind (``evaluates.kind``): ppleval and ppleval_app score temp_sclaw300B's
finished runs on PALOMA. Planning (the training run's config and id inside each evaluation run's), bad settings
refused before compute, evaluation runs held back (neither run nor failed) while their training runs are missing,
and end to end on the smoke scale: train, evaluate, report, with one document's perplexity recomputed by hand
from the checkpoint."""

import json

import numpy as np
import pandas as pd
import pytest
import torch
from omegaconf import OmegaConf, open_dict
from rich.console import Console

from experiments.config.artifacts import load_artifact, run_id_of
from experiments.sweeps.sweep import run_sweep
from tests.evaluation_probe import load_error

TRAINING = "temp_sclaw300B"


def training_config_of(config):
    """An evaluation run's config less its ``evaluate`` section, under its training artifact's name."""
    trained = OmegaConf.masked_copy(config, [key for key in config if key != "evaluate"])
    with open_dict(trained):
        trained.artifact = config.evaluate.artifact
    return trained


@pytest.mark.parametrize(
    "artifact, scale",
    [
        ("ppleval", "smoke"),
        ("ppleval_app", "smoke"),
        ("ppleval", "paper"),
        pytest.param("ppleval_app", "paper", marks=pytest.mark.slow),  # 10 s; ppleval's paper plan is the same code
    ],
)
def test_each_training_run_is_evaluated_once_and_its_id_is_recomputed_from_the_evaluation_run(artifact, scale):
    training = {run.run_id: run for run in load_artifact(TRAINING).runs(scale)}
    runs = load_artifact(artifact).runs(scale)
    assert sorted(run.trained_by.run_id for run in runs) == sorted(training)  # every cell, once
    for run in runs:
        trained = training[run.trained_by.run_id]
        assert run.cell == trained.cell and run.artifact == artifact
        assert run.config.evaluate.kind == "paloma" and run.config.evaluate.checkpoint == "last"
        assert run_id_of(training_config_of(run.config)) == trained.run_id == run.config.evaluate.run_id
        assert run.run_id != trained.run_id
    settings = runs[0].config.evaluate.settings
    if scale == "paper":  # Appendix "Details on PALOMA": windows of 2048, bfloat16 mixed precision
        assert (settings.window, settings.precision, settings.location) == (2048, "bf16-mixed", "allenai/paloma")
    else:
        assert settings.location == "sample" and settings.window == 16


def test_the_two_tables_score_their_own_sources_so_their_runs_differ():
    ppleval, app = (load_artifact(name).runs("smoke") for name in ("ppleval", "ppleval_app"))
    assert len(ppleval[0].config.evaluate.settings.sources) == 12
    assert list(app[0].config.evaluate.settings.sources) == [
        "twitterAAE_HELM_fixed",
        "manosphere_meta_sep",
        "4chan_meta_sep",
        "gab",
    ]
    assert {run.run_id for run in ppleval}.isdisjoint(run.run_id for run in app)


@pytest.mark.parametrize(
    "kind, settings, message",
    [
        (
            "palomo",
            "{}",
            "evaluates.kind='palomo' is not valid; valid choices: ['context_extrapolation', "
            "'decoding_throughput', 'generation_time', 'lmeval', 'paloma']",
        ),
        ("paloma", "{window: 0}", "evaluates.settings.window=0 must be >= 1"),
        ("paloma", "{sources: [c4]}", "sources: 'c4' is not a PALOMA source; valid choices: ['c4_en', 'mc4'"),
        ("paloma", "{split: train}", "evaluates.settings.split='train' is not valid; valid choices: ['val', 'test']"),
        ("paloma", "{windw: 8}", "unknown key evaluates.settings.windw; did you mean evaluates.settings.window?"),
        ("paloma", "{window: 64, tokens_per_batch: 32}", "tokens_per_batch=32 must hold one window of window=64"),
    ],
)
def test_a_bad_evaluation_value_is_named_with_the_valid_choices_when_the_artifact_loads(
    artifact_folder, kind, settings, message
):
    assert message in load_error(artifact_folder, kind, settings, "paloma/average")


def test_missing_training_runs_hold_their_evaluation_runs_back_and_are_named_with_their_command(tmp_path, capsys):
    root, console = tmp_path / "runs", Console(width=400)
    assert run_sweep("ppleval", "smoke", root=root, console=console, dry_run=True) == 0
    listing = capsys.readouterr().out
    assert "4 training runs, 4 of them not done" in listing and listing.count(f"<- {TRAINING} (smoke)") == 4
    assert f"`xlstm-suite sweep {TRAINING} --scale smoke`" in listing

    assert run_sweep("ppleval", "smoke", root=root, console=console) == 0  # nothing failed
    output = capsys.readouterr().out
    assert "0 to run, 4 waiting for their training runs" in output and "waiting for their training runs: 4" in output
    for run in load_artifact("ppleval").runs("smoke"):
        assert (
            f"training run {run.trained_by.run_id} of {TRAINING} (smoke scale; cell {run.trained_by.label}) is "
            "not finished" in output
        )
    assert f"make them with `xlstm-suite sweep {TRAINING} --scale smoke`" in output
    assert not (root / "smoke" / "ppleval").exists()  # neither run nor failed: nothing in the store


def direct_perplexity(model, tokens: np.ndarray, window: int, start_token: int) -> float:
    """A document's perplexity by hand: the stream <|endoftext|> t_0 .. t_{N-2} predicts t_0 .. t_{N-1}; chunk after
    chunk of ``window`` targets, each predicted from the ``window`` inputs ending at its last target."""
    inputs = np.concatenate([[start_token], tokens[:-1]])
    total = 0.0
    for first in range(0, len(tokens), window):
        end = min(first + window, len(tokens))
        begin = max(0, end - window)
        with torch.no_grad():
            logits = model(torch.as_tensor(inputs[begin:end])[None])[0].double()  # (S, V)
        log_probabilities = torch.log_softmax(logits, -1)[torch.arange(end - begin), torch.as_tensor(tokens[begin:end])]
        total += float(log_probabilities[first - begin :].sum())
    return float(np.exp(-total / len(tokens)))


@pytest.mark.slow  # trains the four smoke runs of temp_sclaw300B, then scores PALOMA's stand-in (about 2 minutes)
def test_smoke_scale_trains_evaluates_and_reports_and_a_documents_perplexity_is_recomputed_by_hand(tmp_path):
    from experiments.evaluation.trained_models import trained_language_model
    from experiments.reports.report import write_report
    from experiments.sweeps.training_runs import evaluated_checkpoints, training_directory
    from tasks.lm.paloma import read_documents
    from tasks.lm.paloma_sample import paloma_sample
    from tasks.lm.paloma_windows import tokenize
    from tasks.lm.tokenizer import tokenizer

    root, reports = tmp_path / "runs", tmp_path / "reports"
    assert run_sweep(TRAINING, "smoke", jobs=1, root=root) == 0
    assert run_sweep("ppleval", "smoke", jobs=1, root=root) == 0
    runs = load_artifact("ppleval").runs("smoke")
    for run in runs:
        result = json.loads((root / "smoke" / "ppleval" / run.run_id / "result.json").read_text())
        assert result["metrics"]["train/steps"] == 0 and "trained/val/perplexity" in result["metrics"]
        columns = [f"paloma/{column}" for column in ("c4", "dolma_coding", "average")]
        assert all(1 < result["metrics"][column] < 1e6 for column in columns)
        assert "paloma/twitter_aae" not in result["metrics"]  # ppleval_app's source, not scored here
    outcome = write_report("ppleval", "smoke", root, reports)
    assert outcome.status == "written"
    table = pd.read_csv(reports / "smoke" / "ppleval.csv")
    assert len(table) == 4 and table["ours"].notna().all() and table["paper"].isna().all()  # stand-in sizes
    columns = [
        "c4",
        "mc4_en",
        "wikitext_103",
        "penn_treebank",
        "red_pajama",
        "refined_web",
        "dolma",
        "m2d2_s2orc",
        "m2d2_wikipedia",
        "c4_domains",
        "dolma_subreddits",
        "dolma_coding",
        "average",
    ]  # all of Table ppleval's
    for column in columns:
        assert table[f"{column} ours"].notna().all() and table[f"{column} paper"].isna().all()
    assert (table["average ours"] == table["ours"]).all()
    section = (reports / "smoke" / "ppleval.md").read_text().split("## The paper's columns and ours")[1]
    assert all(f" {column} ours " in section and f" {column} paper " in section for column in columns)

    run = runs[0]
    scores = pd.read_csv(root / "smoke" / "ppleval" / run.run_id / "paloma.csv", keep_default_na=False)
    # the detail table: every subdomain's perplexity per cell, as the run's paloma.csv holds it
    detail = pd.read_csv(reports / "smoke" / "ppleval.detail.csv", index_col="name")
    subdomains = scores[scores["level"] == "subdomain"]
    assert len(detail) == len(subdomains) and detail.shape[1] == 4 and detail.notna().all().all()
    first = subdomains.iloc[0]
    assert f"{first['source']}/{first['subdomain']}" in detail.index
    assert "## Detail" in (reports / "smoke" / "ppleval.md").read_text()
    row = scores[(scores["level"] == "subdomain") & (scores["subdomain"] == "c4_100_domains/domain-1")].iloc[0]
    (document,) = [
        each
        for each in read_documents(paloma_sample(), "val", ["c4_100_domains"])
        if each.subdomain == "c4_100_domains/domain-1"
    ]
    checkpoint = evaluated_checkpoints(training_directory(run.config.evaluate, root), "last")[0]
    model, _ = trained_language_model(run.config, checkpoint)
    tokens = tokenize([document.text])[0]
    assert row["tokens"] == len(tokens)
    assert row["perplexity"] == pytest.approx(
        direct_perplexity(model, tokens, 16, tokenizer("gpt2").end_of_text), rel=1e-5
    )
