"""PALOMA's scores (experiments/evaluation): perplexity per subdomain and per source, token-weighted as Magnusson et
al.'s Equation 1, checked by hand on known fake log-likelihoods; the tables' columns and average checked against the
paper's own rows; and end to end, a tiny real model's windowed scores against its direct full-sequence computation
on documents that fit one window."""

import csv
import gzip
import json
import math

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from experiments.evaluation.paloma_likelihoods import document_likelihoods
from experiments.evaluation.paloma_scores import (
    AVERAGE_COLUMNS,
    TABLES,
    source_perplexities,
    subdomain_perplexities,
    table_columns,
)
from experiments.paths import REPOSITORY_ROOT
from models.registry import build_language_model_from
from tasks.lm.paloma import SOURCES, read_documents
from tasks.lm.paloma_windows import tokenize, window_batches
from tasks.lm.tokenizer import MODEL_VOCABULARY, tokenizer

PAPER_TABLES = REPOSITORY_ROOT / "results" / "paper" / "tables"
PAPER_ROW_COLUMNS = ("model", "size", "paper_name", "params_m")


def per_token_rows(source: str, subdomain: str, log_likelihoods: list[float]) -> list[dict]:
    return [
        {"source": source, "subdomain": subdomain, "log_likelihood": value, "tokens": 1} for value in log_likelihoods
    ]


def paper_rows(table: str) -> list[dict]:
    with (PAPER_TABLES / f"{table}.csv").open() as file:
        return list(csv.DictReader(file))


# --- aggregation ------------------------------------------------------------------------------------------------


def test_source_perplexity_weights_its_subdomains_by_their_tokens():
    """c4_100_domains: www.a.com 3 tokens of log-likelihood -6 (perplexity e^2), www.b.com 1 token of -0.5 (e^0.5);
    Equation 1: exp(3/4 * 2 + 1/4 * 0.5) = e^1.625, not the mean of e^2 and e^0.5. ptb: one domain, e^1."""
    scores = pd.DataFrame(
        per_token_rows("c4_100_domains", "www.a.com", [-1.0, -2.0, -3.0])
        + per_token_rows("c4_100_domains", "www.b.com", [-0.5])
        + per_token_rows("ptb", "ptb", [-1.5, -0.5])
    )
    subdomains = subdomain_perplexities(scores)
    assert subdomains.loc[("c4_100_domains", "www.a.com"), "perplexity"] == pytest.approx(math.exp(2))
    assert subdomains.loc[("c4_100_domains", "www.b.com"), "perplexity"] == pytest.approx(math.exp(0.5))
    sources = source_perplexities(subdomains)
    assert sources.loc["c4_100_domains", "perplexity"] == pytest.approx(math.exp(1.625))
    assert sources.loc["c4_100_domains", "perplexity"] != pytest.approx((math.exp(2) + math.exp(0.5)) / 2)
    assert sources.loc["ptb", "perplexity"] == pytest.approx(math.exp(1.0))
    assert sources["tokens"].to_dict() == {"c4_100_domains": 4, "ptb": 2}
    assert sources["subdomains"].to_dict() == {"c4_100_domains": 2, "ptb": 1}


def test_scores_of_any_granularity_give_the_same_perplexities():
    """Per-document sums give what their tokens' rows give."""
    tokens = pd.DataFrame(per_token_rows("gab", "gab", [-1.0, -2.0]) + per_token_rows("gab", "gab", [-0.25]))
    documents = pd.DataFrame(
        [
            {"source": "gab", "subdomain": "gab", "log_likelihood": -3.0, "tokens": 2},
            {"source": "gab", "subdomain": "gab", "log_likelihood": -0.25, "tokens": 1},
        ]
    )
    assert source_perplexities(subdomain_perplexities(tokens)).equals(
        source_perplexities(subdomain_perplexities(documents))
    )


def test_table_columns_are_the_papers_and_cover_the_16_sources():
    for table, columns in TABLES.items():
        header = [name for name in paper_rows(table)[0] if name not in PAPER_ROW_COLUMNS]
        assert header == [*columns, *([AVERAGE_COLUMNS[table]] if table in AVERAGE_COLUMNS else [])]
    shown = [source for columns in TABLES.values() for source in columns.values()]
    assert len(TABLES["ppleval"]) == 12 and len(TABLES["ppleval_app"]) == 4
    assert sorted(shown) == sorted(SOURCES)


def test_the_average_column_is_the_mean_of_the_papers_12_sources():
    """Every row of the paper's ppleval: our average of its 12 printed perplexities is its printed average (within the
    rounding of 13 numbers to 2 decimals)."""
    for paper in paper_rows("ppleval"):
        sources = pd.DataFrame(
            {"perplexity": {source: float(paper[column]) for column, source in TABLES["ppleval"].items()}}
        )
        assert table_columns(sources, "ppleval")["average"] == pytest.approx(float(paper["average"]), abs=0.01), paper


def test_scores_and_tables_refuse_bad_input():
    with pytest.raises(ValueError, match=r"missing \['tokens'\]"):
        subdomain_perplexities(pd.DataFrame({"source": ["gab"], "subdomain": ["gab"], "log_likelihood": [-1.0]}))
    with pytest.raises(ValueError, match="<= 0; found 0.5"):
        subdomain_perplexities(pd.DataFrame(per_token_rows("gab", "gab", [0.5])))
    with pytest.raises(ValueError, match=r"without scored tokens.*\('gab', 'gab'\)"):
        subdomain_perplexities(
            pd.DataFrame([{"source": "gab", "subdomain": "gab", "log_likelihood": 0.0, "tokens": 0}])
        )
    sources = source_perplexities(subdomain_perplexities(pd.DataFrame(per_token_rows("gab", "gab", [-1.0]))))
    with pytest.raises(ValueError, match=r"needs the PALOMA sources \['4chan_meta_sep', 'manosphere_meta_sep'"):
        table_columns(sources, "ppleval_app")
    with pytest.raises(ValueError, match=r"unknown PALOMA table 'ppl'; valid choices: \['ppleval', 'ppleval_app'\]"):
        table_columns(sources, "ppl")


# --- end to end with a tiny real model --------------------------------------------------------------------------

TEXTS = {  # subdomain -> documents; window 8: the short ones fit one window, the last does not
    "www.a.com": ["The river ran past old houses.", "Boats and birds."],
    "www.b.com": [
        "Numbers like 42 appear.",
        "Ada and Linus counted twelve grey boats under a quiet sky, while the old stone houses stood along the river.",
    ],
}


@pytest.mark.parametrize("model_name", ["llama", "xlstm_1_0"])
def test_windowed_scores_of_a_real_model_are_its_direct_scores(tmp_path, model_name):
    folder = tmp_path / "c4_100_domains" / "val"
    folder.mkdir(parents=True)
    with gzip.open(folder / "val.jsonl.gz", "wt", encoding="utf-8") as file:
        file.writelines(
            json.dumps({"text": text, "id": f"{subdomain}-{index}", "subdomain": subdomain}) + "\n"
            for subdomain, texts in TEXTS.items()
            for index, text in enumerate(texts)
        )
    documents = list(read_documents(tmp_path, "val", ["c4_100_domains"]))
    tokens = tokenize([document.text for document in documents])
    assert [len(ids) <= 8 for ids in tokens] == [True, True, True, False]
    torch.manual_seed(0)
    model = build_language_model_from(model_name, MODEL_VOCABULARY, embedding_dim=16, num_blocks=1).eval()
    end_of_text = tokenizer("gpt2").end_of_text

    scored = {
        budget: document_likelihoods(model, window_batches(tokens, 8, budget, end_of_text), len(documents))
        for budget in (8, 64)
    }  # one window per batch, or many padded to the longest
    for budget in (8, 64):
        assert list(scored[budget].tokens) == [len(ids) for ids in tokens]
    np.testing.assert_allclose(scored[8].log_likelihood, scored[64].log_likelihood, rtol=1e-5)

    with torch.no_grad():
        direct = []
        for ids in tokens[:3]:
            ids = torch.as_tensor(ids)
            inputs = torch.cat([torch.tensor([end_of_text]), ids[:-1]])[None]  # (1, N)
            direct.append(-F.cross_entropy(model(inputs)[0], ids, reduction="sum").item())
    np.testing.assert_allclose(scored[64].log_likelihood[:3], direct, rtol=1e-5)

    scores = pd.DataFrame(
        {
            "source": [d.source for d in documents],
            "subdomain": [d.subdomain for d in documents],
            "log_likelihood": scored[64].log_likelihood,
            "tokens": scored[64].tokens,
        }
    )
    subdomains = subdomain_perplexities(scores)
    a_tokens = len(tokens[0]) + len(tokens[1])
    assert subdomains.loc[("c4_100_domains", "www.a.com"), "perplexity"] == pytest.approx(
        math.exp(-(direct[0] + direct[1]) / a_tokens)
    )
    total = scored[64].log_likelihood.sum() / scored[64].tokens.sum()
    assert source_perplexities(subdomains).loc["c4_100_domains", "perplexity"] == pytest.approx(math.exp(-total))
