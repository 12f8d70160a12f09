"""Rare-token prediction (Figure lstmProblems, right): WikiText's line records joined by article, the hub dataset's
configuration, token-frequency buckets from the training tokens (checked against a plain count), evaluation batches
carrying each target's bucket, the language model's perplexity per bucket (checked against log-softmax by hand),
and the artifact end to end at smoke scale with its report."""

import json
import math
from collections import Counter
from types import SimpleNamespace

import lightning
import pandas as pd
import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from experiments.cli import main
from experiments.config.report_layouts import report_layout
from experiments.reports.bucket_figure import bucket_figure
from experiments.training.language_model_module import LanguageModelModule
from tasks.lm.config import LMTaskConfig
from tasks.lm.corpus import corpus_problems, document_batches
from tasks.lm.data import build_datamodule, part_tokens
from tasks.lm.token_frequency import NO_BUCKET, bucket_labels, token_buckets
from tasks.lm.wikitext import wikitext_articles
from tasks.spec import TaskSpec

WIKITEXT_LINES = [
    "",
    " = Valkyria Chronicles III = \n",
    "",
    " Senjō no Valkyria 3 is a game . \n",
    " = = Gameplay = = \n",
    " It plays like its predecessors . \n",
    " = Tower Building = \n",
    " The tower is tall . \n",
    " = = = History = = = \n",
    " Built in 1900 . \n",
    " = Third = \n",
    " Short . \n",
]


def test_wikitext_records_are_joined_by_article_and_section_headings_stay_inside():
    batches = [WIKITEXT_LINES[:5], WIKITEXT_LINES[5:]]
    articles = [article for batch in wikitext_articles(batches, per_batch=2) for article in batch]
    assert articles == ["".join(WIKITEXT_LINES[:6]), "".join(WIKITEXT_LINES[6:10]), "".join(WIKITEXT_LINES[10:])]
    assert [len(batch) for batch in wikitext_articles(batches, per_batch=2)] == [2, 1]


def test_a_hub_corpus_is_read_with_its_configuration_and_by_article(monkeypatch):
    import datasets

    calls = []

    class Stream:
        def iter(self, batch_size):
            yield {"text": WIKITEXT_LINES}

    monkeypatch.setattr(datasets, "load_dataset", lambda *args, **kwargs: calls.append((args, kwargs)) or Stream())
    articles = [
        text
        for batch in document_batches("Salesforce/wikitext", "test", "text", "wikitext-103-raw-v1", "wikitext_articles")
        for text in batch
    ]
    assert calls == [(("Salesforce/wikitext", "wikitext-103-raw-v1"), {"split": "test", "streaming": True})]
    assert [article.splitlines()[0] for article in articles] == [
        " = Valkyria Chronicles III = ",
        " = Tower Building = ",
        " = Third = ",
    ]


def test_a_configuration_for_local_files_is_refused(tmp_path):
    (tmp_path / "a.txt").write_text("text")
    problems = corpus_problems(str(tmp_path / "a.txt"), ["train"], corpus_config="wikitext-103-raw-v1")
    assert problems and "corpus_config='wikitext-103-raw-v1'" in problems[0]


def test_buckets_follow_the_training_counts():
    train = torch.tensor([5, 5, 5, 7, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9]).numpy()
    counts = Counter(train.tolist())
    edges = [0, 1, 3, 10]
    buckets = token_buckets(train, edges, vocab_size=12)
    for token in range(12):
        count = counts.get(token, 0)
        expected = max(index for index, edge in enumerate(edges) if count >= edge)
        assert buckets[token] == expected, (token, count)
    assert bucket_labels(edges) == ("0", "1-2", "3-9", "10+")
    assert token_buckets(train, [1, 3], vocab_size=12)[0] == NO_BUCKET  # unseen, below the first edge


@pytest.mark.parametrize("edges", [[], [3, 3], [-1, 2], [5, 1]])
def test_bad_frequency_edges_are_named(edges, tmp_path):
    (tmp_path / "a.txt").write_text("some text")
    config = LMTaskConfig(
        name="t",
        family="lm",
        corpus=str(tmp_path / "a.txt"),
        text_field="text",
        train_split="train",
        validation_split=None,
        test_split=None,
        holdout_fraction=0.2,
        tokenizer="gpt2",
        vocab_size=50304,
        context_length=4,
        data_seed=0,
        max_train_tokens=None,
        val_sequences=1,
        test_sequences=1,
        frequency_edges=edges,
    )
    assert any(f"frequency_edges={edges}" in problem for problem in config.problems())


def test_evaluation_batches_carry_the_bucket_of_each_target(tmp_path):
    texts = [
        f"Document {index}: " + " ".join(["alpha", "beta", "gamma", f"rare{index}"][: 2 + index % 3] * (1 + index))
        for index in range(40)
    ]
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text("".join(json.dumps({"text": text}) + "\n" for text in texts))
    config = LMTaskConfig(
        name="t",
        family="lm",
        corpus=str(corpus),
        text_field="text",
        train_split="train",
        validation_split=None,
        test_split=None,
        holdout_fraction=0.2,
        tokenizer="gpt2",
        vocab_size=50304,
        context_length=8,
        data_seed=0,
        max_train_tokens=None,
        val_sequences=2,
        test_sequences=2,
        frequency_edges=[0, 1, 5, 50],
    )
    assert config.spec().token_buckets == ("0", "1-4", "5-49", "50+")
    datamodule = build_datamodule(config, 2)
    datamodule.trainer = SimpleNamespace(global_step=0, global_rank=0, world_size=1, accumulate_grad_batches=1)
    counts = Counter(part_tokens(config, "train").tolist())
    for inputs, targets, buckets in datamodule.test_dataloader():
        assert buckets.shape == targets.shape == inputs.shape
        for target, bucket in zip(targets.flatten().tolist(), buckets.flatten().tolist()):
            count = counts.get(target, 0)
            assert bucket == (0 if count == 0 else 1 if count < 5 else 2 if count < 50 else 3)


class Bigram(nn.Module):
    def __init__(self, vocabulary: int) -> None:
        super().__init__()
        self.table = nn.Embedding(vocabulary, vocabulary)

    def forward(self, tokens):  # (B, S) -> (B, S, V)
        return self.table(tokens)


def test_the_perplexity_of_each_bucket_is_that_of_its_tokens(tmp_path):
    torch.manual_seed(0)
    vocabulary, names = 11, ("rare", "common")
    inputs = torch.randint(0, vocabulary, (6, 5))
    targets = torch.randint(0, vocabulary, (6, 5))
    buckets = (targets % 3).clamp(max=1) - (targets == 0).long() * 2  # 0 and 1, -1 (no bucket) for target 0
    spec = TaskSpec(
        name="t",
        input_kind="tokens",
        input_size=vocabulary,
        num_classes=vocabulary,
        random_accuracy=1 / vocabulary,
        group="lm",
        output_kind="vocab",
        token_buckets=names,
    )
    module = LanguageModelModule(spec, Bigram(vocabulary), optim={"lr": 1e-3}, max_steps=1)
    trainer = lightning.Trainer(
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
    )
    loader = DataLoader(TensorDataset(inputs, targets, buckets), batch_size=4)
    [result] = trainer.test(module, loader, verbose=False)
    log_probabilities = torch.log_softmax(module.model(inputs).double(), dim=-1)  # (B, S, V)
    nll = -log_probabilities.gather(-1, targets[..., None])[..., 0]  # (B, S)
    assert result["test/perplexity"] == pytest.approx(math.exp(nll.mean().item()), rel=1e-5)
    for index, name in enumerate(names):
        expected = math.exp(nll[buckets == index].mean().item())
        assert result[f"test/perplexity/frequency/{name}"] == pytest.approx(expected, rel=1e-5)


def test_the_buckets_figure_draws_each_models_bucket_values_in_order():
    layout = report_layout(
        {
            "kind": "buckets",
            "cells": ["model"],
            "metric": "test/perplexity",
            "prefix": "test/perplexity/frequency/",
            "buckets": ["0", "1-9", "10+"],
        }
    )
    table = pd.DataFrame(
        {
            "model": ["llama", "lstm_block"],
            "ours": [30.0, 40.0],
            "test/perplexity/frequency/0": [900.0, math.nan],
            "test/perplexity/frequency/1-9": [300.0, 500.0],
            "test/perplexity/frequency/10+": [20.0, 25.0],
        }
    )
    figure = bucket_figure(layout, table, "title")
    absolute, relative = figure.axes
    drawn = {line.get_label(): list(line.get_ydata()) for line in absolute.get_lines()}
    assert drawn.keys() == {"Llama (all tokens: 30.0)", "LSTM (Block) (all tokens: 40.0)"}
    assert drawn["Llama (all tokens: 30.0)"] == [900.0, 300.0, 20.0]
    assert drawn["LSTM (Block) (all tokens: 40.0)"][1:] == [500.0, 25.0]
    assert [tick.get_text() for tick in absolute.get_xticklabels()] == ["0", "1-9", "10+"]
    assert absolute.get_yscale() == "log"
    ratios = {
        line.get_label(): list(line.get_ydata())
        for line in relative.get_lines()
        if not line.get_label().startswith("_")
    }
    assert ratios["Llama"] == [1.0, 1.0, 1.0]
    assert ratios["LSTM (Block)"][1:] == pytest.approx([500 / 300, 25 / 20])


@pytest.mark.parametrize("buckets", [[], [0, "1-9"], ["a", "a"]])
def test_bad_buckets_of_a_report_are_named(buckets):
    with pytest.raises(ValueError, match="buckets="):
        report_layout(
            {
                "kind": "buckets",
                "cells": ["model"],
                "metric": "test/perplexity",
                "prefix": "test/perplexity/frequency/",
                "buckets": buckets,
            }
        )


@pytest.mark.slow  # 30 s; its parts are tested above (data, module, figure), the README plans its paper scale
def test_the_rare_token_artifact_runs_and_reports_per_bucket_at_smoke_scale(tmp_path):
    root, reports = tmp_path / "runs", tmp_path / "reports"
    assert main(["sweep", "lstmProblems-rare_tokens", "--scale", "smoke", "--root", str(root)]) == 0
    assert (
        main(
            [
                "report",
                "lstmProblems-rare_tokens",
                "--scale",
                "smoke",
                "--root",
                str(root),
                "--destination",
                str(reports),
            ]
        )
        == 0
    )
    table = pd.read_csv(reports / "smoke" / "lstmProblems-rare_tokens.csv")
    assert list(table["model"]) == ["llama", "lstm_block", "xlstm_1_0"]
    buckets = [f"test/perplexity/frequency/{name}" for name in ("0", "1-9", "10-99", "100+")]
    assert table[buckets].notna().all().all() and (table[buckets] > 1).all().all()
    assert (reports / "smoke" / "lstmProblems-rare_tokens.png").exists()
    page = (reports / "smoke" / "lstmProblems-rare_tokens.md").read_text()
    assert "test/perplexity/frequency/1-9" in page
