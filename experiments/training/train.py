"""One training run: build task data and model from a resolved config, fit with Lightning, evaluate."""

import logging
import shutil
import time
import warnings
from pathlib import Path

import lightning as L
import torch
from lightning.pytorch.callbacks import Callback, ModelCheckpoint
from omegaconf import DictConfig, OmegaConf

from experiments.config.validation import backbone_options, validate_run_config
from experiments.training.data import build_datamodule
from experiments.training.distribution import compile_network, distributed_trainer_arguments
from experiments.training.language_model_module import LanguageModelModule
from experiments.training.module import SequenceTaskModule
from experiments.training.progress import StepProgressBar
from models.registry import build_backbone, build_language_model_from


class FailAfterSteps(Callback):
    """Fault injection for testing the sweep runner: raise once ``steps`` training steps are done."""

    def __init__(self, steps: int):
        self.steps = steps

    def on_train_batch_end(self, trainer, *args):
        if trainer.global_step >= self.steps:
            raise RuntimeError(f"debug.fail_after_steps={self.steps}: failing on purpose")


def build_backbone_from_config(model: DictConfig) -> torch.nn.Module:
    return build_backbone(model.name, embedding_dim=model.embedding_dim, num_blocks=model.num_blocks,
                          **backbone_options(model))


def _logger(config: DictConfig, run_dir: Path):
    from lightning.pytorch import loggers

    if config.trainer.logger == "csv":
        return loggers.CSVLogger(save_dir=run_dir, name="", version="")
    if config.trainer.logger == "tensorboard":
        return loggers.TensorBoardLogger(save_dir=run_dir, name="", version="tensorboard")
    return loggers.WandbLogger(save_dir=run_dir, name=run_dir.name, config=OmegaConf.to_container(config))


def _checkpoint_callbacks(checkpoints: Path, monitor: tuple[str, str]) -> tuple[ModelCheckpoint, ModelCheckpoint]:
    """The best checkpoint by the module's validation metric ``monitor`` (name, "max" or "min"; classification:
    scaled accuracy, regression: MSE), the run's metrics come from it, and ``last.ckpt``, rewritten at every
    validation. Lightning's own ``save_last`` beside a monitored metric is rewritten only when that metric improves.
    The order matters: ``last.ckpt`` then holds the best callback's state after the same validation."""
    metric, mode = monitor
    best = ModelCheckpoint(dirpath=checkpoints, monitor=metric, mode=mode, save_top_k=1)
    latest = ModelCheckpoint(dirpath=checkpoints, filename="last", enable_version_counter=False)
    return best, latest


def _remove_abandoned_attempt(checkpoints: Path) -> None:
    """Runs do not resume yet (the language-modelling issue adds resume from ``last.ckpt``): a fresh attempt starts
    from step 0, and a killed attempt's checkpoints would otherwise stay beside the new ones, named ``-v1``."""
    shutil.rmtree(checkpoints, ignore_errors=True)


def build_module(config: DictConfig, spec) -> L.LightningModule:
    """The run's module, by the task spec's output kind: a language model (output kind "vocab": token embedding,
    backbone, LM head over the vocabulary) or the task spec's encoder and decoder around the backbone."""
    optim = OmegaConf.to_container(config.optim, resolve=True)
    tie_embeddings = bool(config.model.get("tie_embeddings", False))
    if spec.output_kind == "vocab":
        model = build_language_model_from(config.model.name, spec.num_classes, tie_embeddings,
                                          embedding_dim=config.model.embedding_dim, num_blocks=config.model.num_blocks,
                                          **backbone_options(config.model))
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
    (artifact, scale, cell, run id) when it is not finished or its checkpoint is missing."""
    from experiments.sweeps.run_store import finished_result

    evaluate = config.evaluate
    training_dir = Path(run_dir).parents[2] / evaluate.scale / evaluate.artifact / evaluate.run_id
    named = (f"training run {evaluate.run_id} of {evaluate.artifact} ({evaluate.scale} scale; cell {evaluate.cell})")
    result = finished_result(training_dir)
    if result is None:
        raise TrainingRunMissing(f"{named} is not finished: {training_dir} holds no result.json; run `xlstm-suite "
                                 f"sweep {evaluate.artifact} --scale {evaluate.scale}` first")
    checkpoints = training_dir / "checkpoints"
    found = ([checkpoints / "last.ckpt"] if evaluate.checkpoint == "last" else
             [path for path in sorted(checkpoints.glob("*.ckpt")) if path.name != "last.ckpt"])
    if len(found) != 1 or not found[0].exists():
        raise TrainingRunMissing(f"{named} has no single {evaluate.checkpoint} checkpoint in {checkpoints} (found "
                                 f"{[path.name for path in found]}); it was trained with trainer.checkpoint=false, or "
                                 "its checkpoints were removed")
    trained_model = OmegaConf.load(training_dir / "config.yaml").model
    if OmegaConf.to_container(trained_model) != OmegaConf.to_container(config.model):
        raise TrainingRunMissing(f"{named} trained another model config than this run's: {trained_model} vs "
                                 f"{config.model}")
    return found[0], result


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
    trainer = L.Trainer(precision=config.trainer.precision, accelerator=config.trainer.accelerator,
                        devices=config.trainer.devices, logger=_logger(config, run_dir), enable_checkpointing=False,
                        enable_model_summary=False, callbacks=[StepProgressBar()], default_root_dir=run_dir)
    started = time.perf_counter()
    metrics = {}
    for evaluate in (trainer.validate, trainer.test):
        for result in evaluate(module, datamodule=data, verbose=False):
            metrics.update({name: float(value) for name, value in result.items()})
    metrics |= {f"trained/{name}": value for name, value in trained["metrics"].items()}
    metrics["train/steps"] = 0.0
    metrics["eval/seconds"] = time.perf_counter() - started
    return metrics


def run_training(config: DictConfig, run_dir: Path) -> dict[str, float]:
    """Train one run into ``run_dir`` (logs, metrics.csv, checkpoints) and return its final metrics: validation and
    test metrics of the checkpoint with the best validation metric (scaled accuracy; MSE for a regression). An
    evaluation-only run (``evaluate`` in its config) is run_evaluation's."""
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
    callbacks = [StepProgressBar()]  # a bar at a terminal, a line every 30 s in a sweep worker's log
    checkpoints = run_dir / "checkpoints"
    if config.trainer.checkpoint:
        _remove_abandoned_attempt(checkpoints)
        best, latest = _checkpoint_callbacks(checkpoints, module.monitor)
        callbacks += [best, latest]
    if config.debug.fail_after_steps is not None:
        callbacks.append(FailAfterSteps(config.debug.fail_after_steps))
    trainer = L.Trainer(
        max_steps=config.trainer.max_steps,
        # Lightning counts the interval in micro-batches, the config in optimizer steps
        val_check_interval=min(config.trainer.val_every_steps, config.trainer.max_steps)
        * placement["accumulate_grad_batches"],
        check_val_every_n_epoch=None,
        gradient_clip_val=config.trainer.gradient_clip_val,
        **placement,
        logger=_logger(config, run_dir),
        callbacks=callbacks,
        default_root_dir=run_dir,
        enable_checkpointing=bool(config.trainer.checkpoint),
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )
    started = time.perf_counter()
    trainer.fit(module, datamodule=data)
    best_checkpoint = None
    if config.trainer.checkpoint:
        trainer.save_checkpoint(checkpoints / "last.ckpt")  # the steps since the last validation
        best_checkpoint = best.best_model_path
    metrics = {}
    for evaluate in (trainer.validate, trainer.test):
        for result in evaluate(module, datamodule=data, ckpt_path=best_checkpoint, verbose=False):
            metrics.update({name: float(value) for name, value in result.items()})
    metrics["train/steps"] = float(trainer.global_step)
    metrics["train/seconds"] = time.perf_counter() - started
    return metrics
