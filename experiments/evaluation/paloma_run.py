"""The ``paloma`` evaluation kind's run: a finished language-model training run's checkpoint scored on PALOMA.

The run loads the checkpoint its ``evaluate`` section names into the model its config builds (on its
accelerator), scores the documents of ``evaluate.settings`` (experiments.config.evaluation_kinds.
PalomaSettings) window by window (tasks.text.Paloma.windows, experiments.evaluation.paloma_likelihoods) and writes
``paloma.csv`` into the run directory: one row per subdomain and one per source (tokens, log-likelihood,
perplexity). Its metrics, result.json's: ``paloma/<column>`` for the columns of every paper table whose sources it
scored (experiments.evaluation.paloma_scores.TABLES: ppleval's 12 sources and average, ppleval_app's 4),
``paloma/domain/<source>/<subdomain>`` for every subdomain (the appendix's detail table), ``paloma/tokens``, the training run's metrics prefixed ``trained/``, ``train/steps`` 0 and ``eval/seconds``.
"""

import time
from pathlib import Path

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from experiments.atomic import write_text_atomic
from experiments.config.evaluation_kinds import PalomaSettings
from experiments.evaluation.paloma_likelihoods import document_likelihoods
from experiments.evaluation.paloma_scores import TABLES, source_perplexities, subdomain_perplexities, table_columns
from experiments.evaluation.trained_models import language_model_tokenizer, precision_context, trained_language_model
from experiments.training.train import training_checkpoint
from tasks.registry import TEXT

SCORES_FILE = "paloma.csv"
DOMAIN_METRIC = "paloma/domain/"  # + <source>/<subdomain>: a subdomain's perplexity (Appendix "PALOMA" detail table)


def run_paloma(config: DictConfig, run_dir: Path) -> dict[str, float]:
    """Score the training run's checkpoint on PALOMA; TrainingRunMissing before any compute if it is not there."""
    checkpoint, trained = training_checkpoint(config, run_dir)
    settings = PalomaSettings(**OmegaConf.to_container(config.evaluate.settings))
    started = time.perf_counter()
    model, device = trained_language_model(config, checkpoint)
    name = language_model_tokenizer(config)
    documents = TEXT.paloma.documents(settings.location, settings.split, settings.sources)
    batches = TEXT.paloma.windows(
        [document.text for document in documents], name, settings.window, settings.tokens_per_batch
    )
    with precision_context(settings.precision, device):
        likelihoods = document_likelihoods(model, batches, len(documents), device)
    scores = pd.DataFrame(
        {
            "source": [document.source for document in documents],
            "subdomain": [document.subdomain for document in documents],
            "log_likelihood": likelihoods.log_likelihood,
            "tokens": likelihoods.tokens,
        }
    )
    subdomains = subdomain_perplexities(scores)
    sources = source_perplexities(subdomains)
    write_text_atomic(Path(run_dir) / SCORES_FILE, scores_csv(subdomains, sources))
    metrics = {
        f"paloma/{column}": float(value)
        for table, columns in TABLES.items()
        if set(columns.values()) <= set(sources.index)
        for column, value in table_columns(sources, table).items()
    }
    metrics["paloma/tokens"] = float(sources["tokens"].sum())
    metrics |= {
        f"{DOMAIN_METRIC}{source}/{subdomain}": float(perplexity)  # the detail table's values
        for (source, subdomain), perplexity in subdomains["perplexity"].items()
    }
    metrics |= {f"trained/{metric}": value for metric, value in trained["metrics"].items()}
    metrics["train/steps"] = 0.0
    metrics["eval/seconds"] = time.perf_counter() - started
    return metrics


def scores_csv(subdomains: pd.DataFrame, sources: pd.DataFrame) -> str:
    """One row per subdomain (``level`` subdomain) and per source (``level`` source, subdomain empty)."""
    by_subdomain = subdomains.reset_index().assign(level="subdomain")
    by_source = sources.reset_index().assign(level="source", subdomain="")
    columns = ["level", "source", "subdomain", "tokens", "log_likelihood", "perplexity"]
    by_source["log_likelihood"] = (
        subdomains.groupby(level="source")["log_likelihood"].sum().reindex(sources.index).to_numpy()
    )
    return pd.concat([by_subdomain, by_source])[columns].to_csv(index=False)
