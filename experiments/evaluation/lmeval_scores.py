"""Table lmeval's columns from the LM Evaluation Harness's results, as the paper reports them (Appendix "Details on
Downstream Evaluation"): "accuracy for LAMADA, WinoGrande, PIQA, and ARC-easy, and accuracy normalized by sequence
length for HellaSwag and ARC-challenge" (the harness's ``acc`` and ``acc_norm``) and LAMBADA's perplexity, each
evaluated in several precisions with "the best value respectively" kept (best as the harness's higher_is_better
says); accuracies in percent as the table prints them; ``average_acc`` the mean of the six accuracy columns (the
table's Average: its rows' means to the printed digit)."""

import math

# table column -> (harness task, harness metric)
COLUMNS = {
    "lambada_ppl": ("lambada_openai", "perplexity"),
    "lambada_acc": ("lambada_openai", "acc"),
    "hellaswag_acc": ("hellaswag", "acc_norm"),
    "piqa_acc": ("piqa", "acc"),
    "arc_easy_acc": ("arc_easy", "acc"),
    "arc_challenge_acc": ("arc_challenge", "acc_norm"),
    "winogrande_acc": ("winogrande", "acc"),
}
ACCURACY_COLUMNS = [column for column in COLUMNS if column.endswith("_acc")]
PERCENT = 100.0


def harness_metrics(results: dict) -> dict[str, float]:
    """The harness's ``results`` (task -> {"<metric>,<filter>": value}) as {"<task>/<metric>": value}: every number
    of the default filter ``none``, standard errors left out."""
    metrics = {}
    for task, values in results.items():
        for key, value in values.items():
            metric, _, filtered = key.partition(",")
            if filtered == "none" and not metric.endswith("_stderr") and isinstance(value, int | float):
                metrics[f"{task}/{metric}"] = float(value)
    return metrics


def best_metrics(by_precision: dict[str, dict[str, float]], higher_is_better: dict[str, dict[str, bool]]) -> dict:
    """Each "<task>/<metric>" at its best over the precisions (NaN where none has a value); higher_is_better is the
    harness's (task -> metric -> bool)."""
    best = {}
    for key in sorted({key for metrics in by_precision.values() for key in metrics}):
        task, metric = key.split("/", 1)
        values = [metrics[key] for metrics in by_precision.values() if not math.isnan(metrics.get(key, math.nan))]
        higher = higher_is_better.get(task, {}).get(metric, True)
        best[key] = (max(values) if higher else min(values)) if values else math.nan
    return best


def table_columns(best: dict[str, float]) -> dict[str, float]:
    """The table's columns whose task was evaluated (accuracies in percent), and ``average_acc`` when all six
    accuracies are there."""
    columns = {
        column: best[f"{task}/{metric}"] * (PERCENT if column in ACCURACY_COLUMNS else 1.0)
        for column, (task, metric) in COLUMNS.items()
        if f"{task}/{metric}" in best
    }
    if all(column in columns for column in ACCURACY_COLUMNS):
        columns["average_acc"] = sum(columns[column] for column in ACCURACY_COLUMNS) / len(ACCURACY_COLUMNS)
    return columns
