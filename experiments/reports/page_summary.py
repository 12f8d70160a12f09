"""The three questions at the top of a report page, answered from the runs and the checks: what the paper found (its
quoted findings), what we measured at this scale (models with their sizes, the training budget and the seeds per
model, read from the finished runs and their configs, not from the artifact's YAML) and whether the finding shows
(the verdict of the checks), with the budget that would show it where it does not."""

from collections.abc import Sequence

import pandas as pd
from omegaconf import OmegaConf

from experiments.config.artifacts import Artifact, PlannedRun
from experiments.config.titles import summary
from experiments.display import model_name, task_name
from experiments.reports.findings import (
    DOES_NOT_HOLD,
    HOLDS,
    NOT_MEASURED,
    PARTLY,
    Finding,
)
from experiments.reports.power_laws import short_count
from experiments.reports.scale_reading import Reading
from experiments.run_metrics import PARAMETERS_METRIC

PARAMETER_COLUMNS = (PARAMETERS_METRIC, f"trained/{PARAMETERS_METRIC}")
STEP_COLUMNS = ("train/steps", "trained/train/steps")
VERDICT_LINE = "**Does it show here?**"
NOT_TESTED = "Not tested"  # every finding holds, at a scale where none could fail
PLURALS = {
    HOLDS: "hold",
    PARTLY: "hold partly",
    DOES_NOT_HOLD: "do not hold",
    NOT_MEASURED: "are not measured here",
}  # the index page reads the line that starts with it


def count_range(counts) -> str:
    counts = sorted({float(count) for count in counts if not pd.isna(count)})
    if not counts:
        return ""
    return short_count(counts[0]) if len(counts) == 1 else f"{short_count(counts[0])}-{short_count(counts[-1])}"


def training_config(run: PlannedRun):
    """The config that trained the run: its own, or for an evaluation its training run's."""
    return run.trained_by.config if run.trained_by is not None and run.trained_by.config is not None else run.config


def values_of(configs: list, key: str) -> list:
    values = {OmegaConf.select(config, key) for config in configs if config is not None}
    return sorted((value for value in values if value is not None), key=lambda value: (str(type(value)), value))


def model_description(model: str, rows: pd.DataFrame, configs: dict) -> str:
    """ "GPT-3 (4 blocks, E 128, 5.9M parameters)": the model's blocks, embedding dimension and parameter count over
    its finished runs (ranges where they differ)."""
    trained = [training_config(configs[run_id]) for run_id in rows["run_id"] if run_id in configs]
    parts = []
    if sizes := values_of(trained, "model.size"):
        parts.append(f"size {summary(sizes)}")
    if blocks := values_of(trained, "model.num_blocks"):
        parts.append(f"{summary(blocks)} block{'' if blocks == [1] else 's'}")
    if widths := values_of(trained, "model.embedding_dim"):
        parts.append(f"E {summary(widths)}")
    counts = [count for column in PARAMETER_COLUMNS if column in rows for count in rows[column]]
    if shown := count_range(counts):
        parts.append(f"{shown} parameters")
    return f"{model_name(model)} ({', '.join(parts)})" if parts else model_name(model)


def budget_description(done: pd.DataFrame, configs: dict, evaluating: bool) -> str:
    """The training each finished run had: its steps (recorded), batch size and, for a language model, its context
    and tokens; for an evaluation, its checkpoint."""
    trained = [training_config(configs[run_id]) for run_id in done["run_id"] if run_id in configs]
    evaluated = [configs[run_id].config for run_id in done["run_id"] if run_id in configs]
    checkpoint = values_of(evaluated, "evaluate.checkpoint") if evaluating else []
    if checkpoint == ["initial"]:
        return "at their initial weights (evaluation only; time and memory do not depend on the weights' values)"
    steps_column = next(
        (
            column
            for column in STEP_COLUMNS[:: -1 if evaluating else 1]
            if column in done and done[column].notna().any()
        ),
        None,
    )
    steps = sorted({int(value) for value in done[steps_column].dropna()}) if steps_column else []
    batch, context = values_of(trained, "trainer.batch_size"), values_of(trained, "task.context_length")
    corpus = values_of(trained, "task.corpus")
    words = f"{summary(steps) if steps else '?'} training steps of batch {summary(batch)}"
    if corpus and len(batch) == 1 and len(context) == 1 and len(steps) == 1:
        words += (
            f" x {context[0]} tokens ({short_count(steps[0] * batch[0] * context[0])} training tokens per run, "
            f"corpus {summary(corpus)})"
        )
    elif corpus:
        words += f", context {summary(context)}, corpus {summary(corpus)}"
    if evaluating:
        words = f"the {summary(checkpoint)} checkpoints of runs trained {words}"
    return words


def run_seeds(rows: pd.DataFrame, configs: dict) -> tuple:
    """The seeds of ``rows``' runs, sorted: their cell key, or their training configs' where seed is no cell key."""
    if "seed" in rows:
        return tuple(sorted({int(seed) for seed in rows["seed"].dropna()}))
    return tuple(
        values_of([training_config(configs[run_id]) for run_id in rows["run_id"] if run_id in configs], "seed")
    )


def seeds_words(seeds: tuple) -> str:
    return f"seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds)) or '?'}"


def seeds_description(done: pd.DataFrame, configs: dict) -> str:
    """ "seeds 0, 1 for xLSTM[7:1], RWKV-4; seed 0 for GPT-3, Llama": the seeds of each model's finished runs; a task
    that ran other seeds than the model's others is named ("seeds 0, 1, 2 (Pathfinder: seed 0) for Llama")."""
    seeds_of = {}
    for model, rows in done.groupby("model", sort=False):
        per_task = (
            {task: run_seeds(task_rows, configs) for task, task_rows in rows.groupby("task", sort=False)}
            if "task" in rows
            else {}
        )
        ran = list(per_task.values())
        usual = max(dict.fromkeys(ran), key=ran.count) if ran else run_seeds(rows, configs)  # ties: the first task's
        others = "; ".join(f"{task_name(task)}: {seeds_words(its)}" for task, its in per_task.items() if its != usual)
        words = seeds_words(usual) + (f" ({others})" if others else "")
        seeds_of.setdefault(words, []).append(model_name(model))
    return "; ".join(f"{words} for {', '.join(models)}" for words, models in seeds_of.items())


def measured_markdown(
    artifact: Artifact, planned: Sequence[PlannedRun], run_rows: pd.DataFrame, cells: list[str]
) -> str:
    """What the finished runs are: models and sizes, tasks, the budget, the seeds per model, and how many of the
    planned runs finished."""
    configs = {run.run_id: run for run in planned if run.run_id is not None}
    done = run_rows[run_rows["status"] == "done"]
    if done.empty:
        return "no finished run"
    evaluating = bool(artifact.evaluates)
    models = (
        [model_description(model, rows, configs) for model, rows in done.groupby("model", sort=False)]
        if "model" in done
        else []
    )
    parts = [f"{len(models)} model{'' if len(models) == 1 else 's'}: {'; '.join(models)}"] if models else []
    if "task" in cells:
        parts.append("on " + ", ".join(task_name(task) for task in dict.fromkeys(done["task"])))
    parts.append(budget_description(done, configs, evaluating))
    if "model" in done:
        parts.append(seeds_description(done, configs))
    parts.append(f"{len(done)} finished run{'' if len(done) == 1 else 's'} of {len(run_rows)} planned")
    return "; ".join(parts)


def verdict(holds: list[str]) -> str:
    """Yes (every finding holds), No (none does), Not measured (none judged) or Partly."""
    judged = [one for one in holds if one != NOT_MEASURED]
    if not judged:
        return "Not measured"
    if all(one == HOLDS for one in judged):
        return "Yes"
    return "No" if all(one == DOES_NOT_HOLD for one in judged) else "Partly"


def verdict_markdown(findings: Sequence[Finding], holds: list[str], scale: str, reading: Reading) -> str:
    """The line answering "does it show": the verdict, how many findings hold, and where it is not Yes, the budget
    the artifact's YAML names as the one that would show it. Findings that all hold where the reading says they
    cannot fail (``cannot_fail``) are Not tested: their holding shows nothing."""
    if not findings:
        return f"{VERDICT_LINE} Not judged: the artifact names no finding of the paper to check."
    answer = verdict(holds)
    counts = [
        f"{count} {kind if count == 1 else PLURALS[kind]}"
        for kind in (HOLDS, PARTLY, DOES_NOT_HOLD, NOT_MEASURED)
        if (count := sum(one == kind for one in holds))
    ]
    untested = answer == "Yes" and scale != "smoke" and reading.cannot_fail is not None
    line = (
        f"{VERDICT_LINE} **{NOT_TESTED if untested else answer}**: of the paper's {len(findings)} "
        f"finding{'s' if len(findings) > 1 else ''} checked below, {', '.join(counts)}."
    )
    if scale == "smoke":
        line += " (Smoke scale: these numbers test code paths; they are not findings.)"
    elif untested:
        subject, object_ = ("it", "it") if len(findings) == 1 else ("they", "them")
        line += f" At this scale {subject} cannot fail: {reading.cannot_fail.strip()}"
        if reading.budget:
            line += f" The budget that would test {object_}: {reading.budget.strip()}"
    elif answer != "Yes" and reading.budget:
        line += f" The budget that would show it: {reading.budget.strip()}"
    return line


def summary_markdown(
    artifact: Artifact,
    planned: Sequence[PlannedRun],
    run_rows: pd.DataFrame,
    cells: list[str],
    findings: Sequence[Finding],
    holds: list[str],
    scale: str,
    reading: Reading,
) -> str:
    lines = ["**What the paper found.**" + ("" if findings else " The artifact quotes no finding of the paper.")]
    for finding in findings:
        lines += [f"> {finding.quote} ({finding.source})", ""]
    lines += [
        f"**What we measured.** {measured_markdown(artifact, planned, run_rows, cells)}.",
        "",
        verdict_markdown(findings, holds, scale, reading),
    ]
    return "\n".join(lines)
