"""PALOMA's perplexities from log-likelihoods: per subdomain, per source, and as the columns of the paper's tables.

Input: rows of (source, subdomain, log_likelihood, tokens), at any granularity (one row per token, per document or
per window): ``log_likelihood`` is a sum of ln p(token | context) in nats over ``tokens`` scored tokens, ``source``
a PALOMA hub config (tasks.text.Paloma.sources) and ``subdomain`` the document's domain.

- A subdomain's perplexity is exp(-LL_d / N_d), its log-likelihood over its token count (OLMo-Eval's
  ``ProcessOutputs``: ``exp(-sum_logits[subdomain] / num_tokens[subdomain])``): the detail table's values.
- A source's perplexity is, as the xLSTM paper words Magnusson et al.'s Equation 1, "the exponential of the negative
  loglikelihoods per domain weighted by the number of tokens per domain in that data source":
  exp(sum_d (N_d / N) * (-LL_d / N_d)) with N = sum_d N_d, which is exp(-sum_d LL_d / N), every token of the
  source weighted alike; not the mean of its subdomains' perplexities.
- The table ``ppleval`` has 12 source columns (7 language-modelling sources and 5 fine-grained domain benchmarks,
  its caption) and ``average``, "the average perplexity across all of these tasks", the arithmetic mean of the 12
  (the paper's rows agree to the rounding); ``ppleval_app`` has 4 source columns and no average. Column names are
  those of results/paper/tables/<table>.csv.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

SCORE_COLUMNS = ("source", "subdomain", "log_likelihood", "tokens")

# table -> its columns (results/paper/tables/<table>.csv) -> the PALOMA source (hub config) each shows
TABLES = {
    "ppleval": {
        "c4": "c4_en",
        "mc4_en": "mc4",
        "wikitext_103": "wikitext_103",
        "penn_treebank": "ptb",
        "red_pajama": "redpajama",
        "refined_web": "falcon-refinedweb",
        "dolma": "dolma-v1_5",
        "m2d2_s2orc": "m2d2_s2orc_unsplit",
        "m2d2_wikipedia": "m2d2_wikipedia_unsplit",
        "c4_domains": "c4_100_domains",
        "dolma_subreddits": "dolma_100_subreddits",
        "dolma_coding": "dolma_100_programing_languages",
    },
    "ppleval_app": {
        "twitter_aae": "twitterAAE_HELM_fixed",
        "manosphere": "manosphere_meta_sep",
        "fourchan": "4chan_meta_sep",
        "gab": "gab",
    },
}
AVERAGE_COLUMNS = {"ppleval": "average"}  # table -> its column of the mean over its source columns


def subdomain_perplexities(scores: pd.DataFrame) -> pd.DataFrame:
    """Per (source, subdomain): ``tokens``, ``log_likelihood`` and ``perplexity`` = exp(-log_likelihood / tokens)."""
    _check_scores(scores)
    totals = scores.groupby(["source", "subdomain"], sort=True)[["tokens", "log_likelihood"]].sum()
    empty = totals.index[totals["tokens"] == 0].tolist()
    if empty:
        raise ValueError(f"subdomains without scored tokens have no perplexity: {empty}")
    totals["perplexity"] = np.exp(-totals["log_likelihood"] / totals["tokens"])
    return totals


def source_perplexities(subdomains: pd.DataFrame) -> pd.DataFrame:
    """Per source, from ``subdomain_perplexities``: ``tokens``, ``subdomains`` (their number) and ``perplexity``,
    the token-weighted combination of its subdomains (Magnusson et al., Equation 1)."""
    weight = subdomains["tokens"] / subdomains.groupby(level="source")["tokens"].transform("sum")
    weighted_loss = weight * (-subdomains["log_likelihood"] / subdomains["tokens"])  # nats per token, weighted
    by_source = subdomains.groupby(level="source")
    return pd.DataFrame(
        {
            "tokens": by_source["tokens"].sum(),
            "subdomains": by_source.size(),
            "perplexity": np.exp(weighted_loss.groupby(level="source").sum()),
        }
    )


def table_columns(sources: pd.DataFrame, table: str) -> pd.Series:
    """One model's row of ``table`` (``ppleval`` or ``ppleval_app``) from ``source_perplexities``: the perplexity of
    each column's source under the paper's column names, and the table's average where it has one."""
    if table not in TABLES:
        raise ValueError(f"unknown PALOMA table {table!r}; valid choices: {sorted(TABLES)}")
    columns = TABLES[table]
    missing = sorted(set(columns.values()) - set(sources.index))
    if missing:
        raise ValueError(
            f"table {table!r} needs the PALOMA sources {missing}, which have no scores; scored: {sorted(sources.index)}"
        )
    row = pd.Series({column: sources.at[source, "perplexity"] for column, source in columns.items()}, name=table)
    if table in AVERAGE_COLUMNS:
        row[AVERAGE_COLUMNS[table]] = row.mean()
    return row


def _check_scores(scores: pd.DataFrame) -> None:
    missing = [column for column in SCORE_COLUMNS if column not in scores.columns]
    if missing:
        raise ValueError(f"PALOMA scores need the columns {list(SCORE_COLUMNS)}; missing {missing}")
    if (scores["tokens"] < 0).any():
        raise ValueError(f"token counts are >= 0; found {scores['tokens'].min()}")
    if (scores["log_likelihood"] > 0).any():
        raise ValueError(f"log-likelihoods are sums of log-probabilities, <= 0; found {scores['log_likelihood'].max()}")
