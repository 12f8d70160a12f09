"""The ``lmeval`` evaluation kind's run: a finished language-model training run's checkpoint scored on downstream
tasks through EleutherAI's LM Evaluation Harness (the optional extra ``lmeval``), once per precision of
``evaluate.settings`` (experiments.config.evaluation_kinds.LmevalSettings), with the harness model
experiments.evaluation.harness_model.SuiteLanguageModel.

It writes ``lmeval.json`` into the run directory (each precision's harness metrics) and returns, for result.json:
``lmeval/<precision>/<task>/<metric>`` for every metric of every task, ``lmeval/best/<task>/<metric>`` its best
over the precisions (as the harness's higher_is_better says), ``lmeval/<column>`` for table lmeval's
columns (experiments.evaluation.lmeval_scores), ``lmeval/ppl_slimpajama_300b`` (the
training run's validation perplexity, the table's SlimPajama column), the training run's metrics prefixed
``trained/``, ``train/steps`` 0 and ``eval/seconds``.
"""

import difflib
import json
import time
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from experiments.atomic import write_text_atomic
from experiments.config.evaluation_kinds import LmevalSettings
from experiments.evaluation.lmeval_scores import best_metrics, harness_metrics, table_columns
from experiments.evaluation.trained_models import language_model_tokenizer, trained_language_model
from experiments.training.train import training_checkpoint
from tasks.registry import TEXT

SCORES_FILE = "lmeval.json"
VALIDATION_PERPLEXITY = "val/perplexity"


def harness_tasks(settings: LmevalSettings):
    """The harness's task manager with ``task_dir`` added (``sample`` or ``offline``: an offline stand-in's folder,
    tasks.text.Text.harness_stand_ins), or of ``task_dir`` alone where it holds every task; ValueError naming each task it
    does not know."""
    try:
        from lm_eval.tasks import TaskManager
    except ImportError as error:
        needed = "the lmeval evaluation needs the LM Evaluation Harness: pip install -e '.[lmeval]'"
        raise ImportError(needed) from error
    stand_ins = TEXT.harness_stand_ins
    folder = stand_ins[settings.task_dir]() if settings.task_dir in stand_ins else settings.task_dir
    if folder is not None and not Path(folder).is_dir():
        raise ValueError(
            f"evaluate.settings.task_dir={settings.task_dir!r} is not a folder (nor one of {list(stand_ins)}, "
            "the offline stand-ins)"
        )
    if folder is not None:  # the harness's own index of its thousands of tasks takes 15 s to build here
        manager = TaskManager(include_path=str(folder), include_defaults=False)
        if set(settings.tasks) <= set(manager.all_tasks):
            return manager
    manager = TaskManager(include_path=str(folder) if folder is not None else None)
    known = set(manager.all_tasks)
    unknown = [task for task in settings.tasks if task not in known]
    if unknown:
        hints = {task: difflib.get_close_matches(task, known, n=3) for task in unknown}
        raise ValueError(
            f"evaluate.settings.tasks: {unknown} are not tasks of the LM Evaluation Harness (closest: "
            f"{hints}); `lm_eval ls tasks` lists them"
        )
    return manager


def run_lmeval(config: DictConfig, run_dir: Path) -> dict[str, float]:
    """Score the training run's checkpoint on the settings' tasks in each precision; TrainingRunMissing or a
    ValueError naming a bad task before any compute."""
    from lm_eval import simple_evaluate

    from experiments.evaluation.harness_model import SuiteLanguageModel

    checkpoint, trained = training_checkpoint(config, run_dir)
    settings = LmevalSettings(**OmegaConf.to_container(config.evaluate.settings))
    manager = harness_tasks(settings)
    started = time.perf_counter()
    model, _ = trained_language_model(config, checkpoint)
    name = language_model_tokenizer(config)
    by_precision, higher_is_better = {}, {}
    for precision in settings.precisions:
        harness = SuiteLanguageModel(model, name, config.task.context_length, precision)
        results = simple_evaluate(
            model=harness,
            tasks=list(settings.tasks),
            limit=settings.limit,
            task_manager=manager,
            bootstrap_iters=0,
            log_samples=False,
            random_seed=config.seed,
        )
        by_precision[precision] = harness_metrics(results["results"])
        higher_is_better |= results["higher_is_better"]
    write_text_atomic(Path(run_dir) / SCORES_FILE, json.dumps(by_precision, indent=1, sort_keys=True))
    best = best_metrics(by_precision, higher_is_better)
    metrics = {
        f"lmeval/{precision}/{key}": value
        for precision, values in by_precision.items()
        for key, value in values.items()
    }
    metrics |= {f"lmeval/best/{key}": value for key, value in best.items()}
    metrics |= {f"lmeval/{column}": value for column, value in table_columns(best).items()}
    if VALIDATION_PERPLEXITY in trained["metrics"]:
        metrics["lmeval/ppl_slimpajama_300b"] = float(trained["metrics"][VALIDATION_PERPLEXITY])
    metrics |= {f"trained/{metric}": value for metric, value in trained["metrics"].items()}
    metrics["train/steps"] = 0.0
    metrics["eval/seconds"] = time.perf_counter() - started
    return metrics
