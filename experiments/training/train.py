"""One training run: build task data and model from a resolved config, fit with Lightning, evaluate."""

import logging
import os
import time
import warnings
from pathlib import Path

import lightning as L
import torch
from lightning.pytorch.callbacks import Callback
from omegaconf import DictConfig, OmegaConf

from experiments.config.validation import backbone_options, validate_run_config
from experiments.run_metrics import PARAMETERS_METRIC, count_parameters
from experiments.sweeps.run_store import DIVERGED_AT_METRIC, DIVERGED_METRIC, finished_result
from experiments.sweeps.training_runs import evaluated_checkpoints, named, training_directory, training_run_problem
from experiments.training.checkpoints import (
    LAST,
    AtomicCheckpointIO,
    RunConfigInCheckpoint,
    checkpoint_callbacks,
    checkpoint_damage,
    resume_point,
    resumed_config_yaml,
)
from experiments.training.data import build_datamodule
from experiments.training.distribution import cluster_plugins, compile_network, distributed_trainer_arguments
from experiments.training.divergence import StopWhenDiverged
from experiments.training.language_model_module import LanguageModelModule
from experiments.training.module import SequenceTaskModule
from experiments.training.progress import StepProgressBar
from experiments.training.requeue import requeue_callbacks
from experiments.training.resumed_metrics import keep_rows_before
from experiments.training.training_clock import TrainingClock
from models.registry import build_backbone, build_language_model_from

FAIL_AFTER_STEPS_VARIABLE = "XLSTM_SUITE_FAIL_AFTER_STEPS"


class FailAfterSteps(Callback):
    """Fault injection for testing the sweep runner: raise once ``steps`` training steps are done."""

    def __init__(self, steps: int):
        self.steps = steps

    def on_train_batch_end(self, trainer, *args):
        if trainer.global_step >= self.steps:
            raise RuntimeError(f"fail_after_steps={self.steps}: failing on purpose")


def fail_after_steps(config: DictConfig) -> int | None:
    """debug.fail_after_steps, else the environment's XLSTM_SUITE_FAIL_AFTER_STEPS: a fault that leaves the run's
    config and id as they are, as a kill does, so that the next attempt of the same run resumes (tests of resume)."""
    if config.debug.fail_after_steps is not None:
        return config.debug.fail_after_steps
    steps = os.environ.get(FAIL_AFTER_STEPS_VARIABLE, "")
    if not steps:
        return None
    if not steps.isdigit() or int(steps) < 1:
        raise ValueError(f"{FAIL_AFTER_STEPS_VARIABLE}={steps!r} is not a step count; valid: an integer >= 1, or unset")
    return int(steps)


def build_backbone_from_config(model: DictConfig) -> torch.nn.Module:
    return build_backbone(
        model.name, embedding_dim=model.embedding_dim, num_blocks=model.num_blocks, **backbone_options(model)
    )


def _logger(config: DictConfig, run_dir: Path, resumed_step: int | None):
    """The run's logger; a resumed run's continues the killed attempt's record from the checkpoint's step (Lightning
    logs what optimizer step s did at step s - 1, so what the killed attempt logged at ``resumed_step`` and later is
    redone): the CSV logger keeps the rows logged below it (keep_rows_before), TensorBoard purges the events at it and
    later (SummaryWriter's purge_step), and W&B resumes the same run, whose id is the run's (W&B drops what the new
    attempt logs at steps it already has)."""
    from lightning.pytorch import loggers

    if config.trainer.logger == "csv":
        logger = loggers.CSVLogger(save_dir=run_dir, name="", version="")
        if resumed_step is not None:
            keep_rows_before(logger, resumed_step)
        return logger
    if config.trainer.logger == "tensorboard":
        return loggers.TensorBoardLogger(save_dir=run_dir, name="", version="tensorboard", purge_step=resumed_step)
    return loggers.WandbLogger(
        save_dir=run_dir, name=run_dir.name, id=run_dir.name, resume="allow", config=OmegaConf.to_container(config)
    )


def build_module(config: DictConfig, spec) -> L.LightningModule:
    """The run's module, by the task spec's output kind: a language model (output kind "vocab": token embedding,
    backbone, LM head over the vocabulary) or the task spec's encoder and decoder around the backbone."""
    optim = OmegaConf.to_container(config.optim, resolve=True)
    tie_embeddings = bool(config.model.get("tie_embeddings", False))
    if spec.output_kind == "vocab":
        model = build_language_model_from(
            config.model.name,
            spec.num_classes,
            tie_embeddings,
            embedding_dim=config.model.embedding_dim,
            num_blocks=config.model.num_blocks,
            **backbone_options(config.model),
        )
        model = compile_network(model, config.trainer, config.model.name)
        return LanguageModelModule(spec=spec, model=model, optim=optim, max_steps=config.trainer.max_steps)
    return SequenceTaskModule(
        spec=spec,
        backbone=compile_network(build_backbone_from_config(config.model), config.trainer, config.model.name),
        embedding_dim=config.model.embedding_dim,
        optim=optim,
        max_steps=config.trainer.max_steps,
        tie_embeddings=tie_embeddings,
    )


class TrainingRunMissing(RuntimeError):
    """An evaluation-only run's training run is not finished (or its checkpoint is gone)."""


def training_checkpoint(config: DictConfig, run_dir: Path) -> tuple[Path, dict]:
    """The checkpoint file an evaluation-only run loads and its training run's result.json, found in the same run
    store as ``run_dir`` (<root>/<scale>/<artifact>/<run_id>); TrainingRunMissing naming the training run
    (artifact, scale, cell, run id) when it is not finished or its checkpoint is missing or damaged."""
    evaluate = OmegaConf.to_container(config.evaluate)
    root = Path(run_dir).parents[2]
    problem = training_run_problem(evaluate, root)
    if problem:
        raise TrainingRunMissing(problem)
    training_dir = training_directory(evaluate, root)
    trained_model = OmegaConf.load(training_dir / "config.yaml").model
    if OmegaConf.to_container(trained_model) != OmegaConf.to_container(config.model):
        raise TrainingRunMissing(
            f"{named(evaluate)} trained another model config than this run's: {trained_model} vs {config.model}"
        )
    checkpoint = evaluated_checkpoints(training_dir, evaluate["checkpoint"])[0]
    if (damage := checkpoint_damage(checkpoint)) is not None:
        raise TrainingRunMissing(
            f"{named(evaluate)}: its checkpoint {checkpoint} {damage}; remove {training_dir} "
            f"and sweep {evaluate['artifact']} again"
        )
    return checkpoint, finished_result(training_dir)


def run_evaluation(config: DictConfig, run_dir: Path) -> dict[str, float]:
    """Evaluate a finished training run's checkpoint on this run's task config (e.g. longer sequences) with no
    training: validation and test metrics, the training run's own metrics prefixed ``trained/`` (its validation
    metric picks the learning rate), ``train/steps`` 0. Fails before building data or model if the training run
    is missing (TrainingRunMissing)."""
    checkpoint, trained = training_checkpoint(config, run_dir)
    run_dir = Path(run_dir)
    logging.getLogger("lightning.pytorch").setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", message=".*does not have many workers.*")
    L.seed_everything(config.seed, workers=True, verbose=False)
    data = build_datamodule(config.task, config.trainer.batch_size)
    module = build_module(config, data.spec)
    module.load_state_dict(torch.load(checkpoint, map_location="cpu", weights_only=False)["state_dict"])
    trainer = L.Trainer(
        precision=config.trainer.precision,
        accelerator=config.trainer.accelerator,
        devices=config.trainer.devices,
        logger=_logger(config, run_dir, None),
        enable_checkpointing=False,
        enable_model_summary=False,
        callbacks=[StepProgressBar()],
        default_root_dir=run_dir,
    )
    started = time.perf_counter()
    metrics = {}
    for evaluate in (trainer.validate, trainer.test):
        for result in evaluate(module, datamodule=data, verbose=False):
            metrics.update({name: float(value) for name, value in result.items()})
    metrics |= {f"trained/{name}": value for name, value in trained["metrics"].items()}
    metrics[PARAMETERS_METRIC] = float(count_parameters(module))
    metrics["train/steps"] = 0.0
    metrics["eval/seconds"] = time.perf_counter() - started
    return metrics


def run_training(config: DictConfig, run_dir: Path) -> dict[str, float]:
    """Train one run into ``run_dir`` (logs, metrics.csv, checkpoints) and return its final metrics: validation and
    test metrics of the checkpoint with the best validation metric (scaled accuracy; MSE for a regression), the
    module's parameter count (experiments.run_metrics), the steps and the training time (of every attempt, a resumed
    run's: experiments.training.training_clock). A run whose training loss turns non-finite stops there, diverged: its
    metrics are those of the weights it diverged to (NaN, as the paper prints for such a run), with
    ``train/diverged`` 1 and the step. An evaluation-only run (``evaluate`` in its config) is run_evaluation's."""
    validate_run_config(config)
    if config.get("evaluate") is not None:
        return run_evaluation(config, run_dir)
    run_dir = Path(run_dir)
    logging.getLogger("lightning.pytorch").setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", message=".*does not have many workers.*")
    warnings.filterwarnings("ignore", message=".*LeafSpec.*")
    warnings.filterwarnings("ignore", message=".*exists and is not empty.*")  # config.yaml etc. are written first
    if config.trainer.num_threads is not None:
        torch.set_num_threads(config.trainer.num_threads)
    placement = distributed_trainer_arguments(config)  # fails before any compute when the batch does not split
    L.seed_everything(config.seed, workers=True, verbose=False)
    data = build_datamodule(config.task, config.trainer.batch_size)
    module = build_module(config, data.spec)
    parameters = count_parameters(module)  # before the strategy places (and may shard) it
    divergence = StopWhenDiverged()
    clock = TrainingClock()
    callbacks = [StepProgressBar(), divergence, clock]  # a bar at a terminal, a line every 30 s in a sweep worker's log
    checkpoints, resume = run_dir / "checkpoints", None
    if config.trainer.checkpoint:
        resumed_config = resumed_config_yaml(config)
        resume = resume_point(run_dir, resumed_config, module)
        saving = checkpoint_callbacks(checkpoints, module.monitor, config.trainer.get("checkpoint_every_steps"))
        callbacks += [*saving, RunConfigInCheckpoint(resumed_config)]
    if fail_after_steps(config) is not None:
        callbacks.append(FailAfterSteps(fail_after_steps(config)))
    callbacks += requeue_callbacks(checkpoints / LAST if config.trainer.checkpoint else None)  # in a SLURM task
    logger = _logger(config, run_dir, resume.step if resume else None)
    trainer = L.Trainer(
        max_steps=config.trainer.max_steps,
        # Lightning counts the interval in micro-batches, the config in optimizer steps
        val_check_interval=min(config.trainer.val_every_steps, config.trainer.max_steps)
        * placement["accumulate_grad_batches"],
        check_val_every_n_epoch=None,
        gradient_clip_val=config.trainer.gradient_clip_val,
        **placement,
        logger=logger,
        callbacks=callbacks,
        default_root_dir=run_dir,
        enable_checkpointing=bool(config.trainer.checkpoint),
        enable_model_summary=False,
        num_sanity_val_steps=0,
        plugins=[AtomicCheckpointIO(), *cluster_plugins()],
    )
    trainer.fit(module, datamodule=data, ckpt_path=resume.checkpoint if resume else None)
    best_checkpoint = None
    if config.trainer.checkpoint:
        trainer.save_checkpoint(checkpoints / LAST)  # the steps since the last checkpoint
        if divergence.diverged_at_step is None:  # a diverged run reports the weights it diverged to
            best_checkpoint = saving[0].best_model_path
    metrics = {}
    for evaluate in (trainer.validate, trainer.test):
        for result in evaluate(module, datamodule=data, ckpt_path=best_checkpoint, verbose=False):
            metrics.update({name: float(value) for name, value in result.items()})
    metrics[PARAMETERS_METRIC] = float(parameters)
    if divergence.diverged_at_step is not None:
        metrics |= {DIVERGED_METRIC: 1.0, DIVERGED_AT_METRIC: float(divergence.diverged_at_step)}
    metrics["train/steps"] = float(trainer.global_step)
    metrics["train/seconds"] = clock.seconds()  # every attempt's, a resumed run's included
    if (cpu_seconds := clock.cpu_seconds()) is not None:  # well below threads x seconds: the cores were shared
        metrics["train/cpu_seconds"] = cpu_seconds
    metrics["train/threads"] = float(torch.get_num_threads())
    return metrics
