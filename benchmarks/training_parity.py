"""Training parity with the official xLSTM (xlstm==2.0.6): the same task, data, module and trainer with the official
backbone and ours, over several seeds each; a two-sample rank test says whether the two distributions of test scaled
accuracy can be told apart at 1%.

    python -m benchmarks.training_parity [--models M ...] [--task T] [--seeds S ...] [--steps N] [--cache PATH]

A run is the formal-main mini sweep's cell of (model, task, seed), composed as the sweep composes it (the artifact's
overrides, cell overrides and mini budget; --steps replaces the budget), and trained by the sweep's own trainer,
``experiments.training.train.run_training``. The official run swaps only the backbone: an official
``xLSTMBlockStack`` with the same layer settings (sLSTM backend "vanilla", which runs on CPU), seeded with the run's
seed and then ``reset_parameters()``, as the official trainer initialises it. Both report what run_training reports:
the test scaled accuracy of the checkpoint with the best validation scaled accuracy. The task data depends on the
task's data_seed only, so every seed and both backbones train on the same batches; the seed draws the
initialisation.

Official runs are slow (the vanilla sLSTM loops over time in Python), so every finished run is kept in a CSV cache
keyed by a hash of (backbone, resolved config); a rerun trains only the runs the cache lacks. The report is printed
and written as markdown beside the cache (``<cache name up to its first dot>.md``).
"""

import argparse
import dataclasses
import hashlib
import math
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import pandas as pd
import torch
from omegaconf import DictConfig
from torch import nn

from experiments.atomic import write_text_atomic
from experiments.config.artifacts import PlannedRun, load_artifact
from experiments.config.configuration import config_yaml
from experiments.config.validation import backbone_options
from experiments.paths import REPORTS
from models.catalog import backbone_config
from models.optim_groups import weight_decay_groups
from models.xlstm.config import XLSTMStackConfig

ARTIFACT, SCALE = "formal-main", "mini"
MODELS = ("xlstm_0_1", "xlstm_1_0", "xlstm_1_1")
DEFAULT_MODELS = ["xlstm_0_1", "xlstm_1_0"]  # the check: the official vanilla sLSTM stack and mLSTM stack
DEFAULT_SEEDS = [0, 1, 2, 3, 4]
BACKBONES = ("ours", "official")
METRIC, VALIDATION_METRIC = "test/scaled_accuracy", "val/scaled_accuracy"
SOLVED_THRESHOLD = 0.9  # the threshold of the paper's finding in configs/paper/formal-main.yaml
SIGNIFICANCE = 0.01
CACHE = REPORTS / "parity" / "training_parity.runs.csv"
COLUMNS = ["backbone", "model", "task", "seed", "steps", "config_hash", METRIC, VALIDATION_METRIC, "seconds"]

Train = Callable[[str, DictConfig], dict[str, float]]  # (backbone, run config) -> run_training's metrics


@dataclass
class ParityCheck:
    """Which runs to compare: models x seeds on one task, each with both backbones."""

    models: list[str]
    task: str
    seeds: list[int]
    steps: int | None  # None: the mini budget of the task's cell
    cache: Path

    @property
    def report_path(self) -> Path:
        return self.cache.with_name(self.cache.name.split(".")[0] + ".md")


# ---- runs: the formal-main mini cells --------------------------------------------------------------------------------


def mini_tasks() -> list[str]:
    return list(load_artifact(ARTIFACT).grid_of(SCALE)["task"])


def planned_runs(check: ParityCheck) -> list[PlannedRun]:
    """The mini cells of the check's models, task and seeds, composed by the artifact planner (its mini grid narrowed
    to those cells, seeds beyond the grid's included), in the order model, seed."""
    artifact = load_artifact(ARTIFACT)
    mini = artifact.scales[SCALE]
    grid = mini["grid"] | {"model": check.models, "task": [check.task], "seed": check.seeds}
    narrowed = dataclasses.replace(artifact, scales=artifact.scales | {SCALE: mini | {"grid": grid}})
    runs = narrowed.runs(SCALE, [f"trainer.max_steps={check.steps}"] if check.steps is not None else [])
    if len(runs) != len(check.models) * len(check.seeds):
        raise ValueError(
            f"{ARTIFACT} {SCALE} has {len(runs)} cells for models {check.models} and seeds {check.seeds}; "
            f"expected one per (model, seed): its grid {artifact.grid_of(SCALE)} varies another key"
        )
    return runs


def cache_key(backbone: str, config: DictConfig) -> str:
    """The first 12 hex digits of the sha256 of the backbone kind and the resolved config's YAML."""
    return hashlib.sha256(f"{backbone}\n{config_yaml(config)}".encode()).hexdigest()[:12]


# ---- backbones: ours and the official one ----------------------------------------------------------------------------


def our_stack_config(model: DictConfig) -> XLSTMStackConfig:
    return backbone_config(
        model.name, embedding_dim=model.embedding_dim, num_blocks=model.num_blocks, **backbone_options(model)
    )


def official_stack_config(ours: XLSTMStackConfig, context_length: int):
    """The official xLSTMBlockStackConfig with our layer settings; the sLSTM runs on the "vanilla" (CPU) backend."""
    from xlstm import (
        FeedForwardConfig,
        mLSTMBlockConfig,
        mLSTMLayerConfig,
        sLSTMBlockConfig,
        sLSTMLayerConfig,
        xLSTMBlockStackConfig,
    )

    mlstm, slstm, feedforward = ours.mlstm, ours.slstm, ours.feedforward
    mlstm_block = mLSTMBlockConfig(
        mlstm=mLSTMLayerConfig(
            num_heads=mlstm.num_heads,
            proj_factor=mlstm.proj_factor,
            round_proj_up_to_multiple_of=mlstm.round_proj_up_to,
            conv1d_kernel_size=mlstm.conv1d_kernel_size,
            qkv_proj_blocksize=mlstm.qkv_proj_blocksize,
        )
    )
    slstm_block = sLSTMBlockConfig(
        slstm=sLSTMLayerConfig(
            backend="vanilla",
            num_heads=slstm.num_heads,
            conv1d_kernel_size=slstm.conv1d_kernel_size,
            bias_init=slstm.bias_init,
            recurrent_weight_init=slstm.recurrent_weight_init,
            gradient_recurrent_clipval=slstm.recurrent_grad_clip,
        ),
        feedforward=FeedForwardConfig(
            proj_factor=feedforward.proj_factor,
            act_fn=feedforward.activation,
            round_proj_up_to_multiple_of=feedforward.round_proj_up_to,
            bias=feedforward.bias,
        ),
    )
    return xLSTMBlockStackConfig(
        mlstm_block=mlstm_block if "mlstm" in ours.block_types else None,
        slstm_block=slstm_block if "slstm" in ours.block_types else None,
        context_length=context_length,  # the mLSTM's causal mask covers this many positions
        num_blocks=ours.num_blocks,
        embedding_dim=ours.embedding_dim,
        slstm_at=list(ours.slstm_at),
        add_post_blocks_norm=ours.add_post_blocks_norm,
        bias=mlstm.bias,  # the official stack sets its mLSTM layers' bias
    )


def official_backbone(config: DictConfig) -> nn.Module:
    """The official stack of the run's model, initialised as the official trainer does (experiments/main.py of
    NX-AI/xlstm): torch.manual_seed(seed), build, reset_parameters()."""
    from xlstm import xLSTMBlockStack

    longest = max(config.task.train_max_length, config.task.eval_max_length)
    torch.manual_seed(config.seed)
    backbone = xLSTMBlockStack(official_stack_config(our_stack_config(config.model), context_length=longest))
    backbone.reset_parameters()
    return backbone


def parameter_count(module: nn.Module) -> int:
    return sum(parameter.numel() for parameter in module.parameters())


def decay_counts(backbone: nn.Module) -> list[tuple[int, int]]:
    """(tensors, parameters) with and without weight decay, grouped as SequenceTaskModule groups them."""
    return [
        (len(group["params"]), sum(p.numel() for p in group["params"]))
        for group in weight_decay_groups(backbone, weight_decay=1.0)
    ]


def official_trainer_decays(official: nn.Module) -> set[int]:
    """Ids of the parameters the official trainer decays: ``weight`` in the name and ``norm`` not (xlstm.utils)."""
    return {id(p) for name, p in official.named_parameters() if "weight" in name and "norm" not in name}


def check_same_architecture(name: str, ours: nn.Module, official: nn.Module) -> None:
    """ValueError naming what differs: the settings (as the official importer reads the official stack), the
    parameter count, or the weight-decay groups (the suite's rule, which on the official stack must also be the
    official trainer's)."""
    from models.xlstm.official import from_official

    imported = from_official(official).config
    if imported != ours.config:
        raise ValueError(
            f"{name}: the official stack's settings differ from ours:\n  official {imported}\n  ours     {ours.config}"
        )
    if parameter_count(ours) != parameter_count(official):
        raise ValueError(
            f"{name}: ours has {parameter_count(ours)} parameters, the official stack {parameter_count(official)}"
        )
    decayed = {id(p) for p in weight_decay_groups(official, weight_decay=1.0)[0]["params"]}
    if decayed != official_trainer_decays(official):
        raise ValueError(
            f"{name}: the suite's weight-decay groups of the official stack differ from the official trainer's"
        )
    ours_groups, official_groups = decay_counts(ours), decay_counts(official)
    if [parameters for _, parameters in ours_groups] != [parameters for _, parameters in official_groups]:
        raise ValueError(
            f"{name}: weight-decay groups [(tensors, parameters) decayed, not decayed] differ: ours "
            f"{ours_groups}, official {official_groups}"
        )


def architecture_lines(config: DictConfig) -> list[str]:
    """Both backbones of the run's model, checked to match, as markdown lines: parameters and weight-decay groups."""
    from experiments.training.train import build_backbone_from_config

    backbones = {"ours": build_backbone_from_config(config.model), "official": official_backbone(config)}
    check_same_architecture(config.model.name, backbones["ours"], backbones["official"])
    counts = ", ".join(f"{backbone} {parameter_count(module):,}" for backbone, module in backbones.items())
    return [f"- parameters: {counts}"] + [
        f"- weight-decay groups, {backbone}: decay {decay[1]:,} parameters in {decay[0]} tensors, "
        f"no decay {no_decay[1]:,} in {no_decay[0]} tensors"
        for backbone, (decay, no_decay) in ((name, decay_counts(module)) for name, module in backbones.items())
    ]


# ---- training and the cache ------------------------------------------------------------------------------------------


def train_run(backbone: str, config: DictConfig) -> dict[str, float]:
    """run_training itself, in a temporary run directory (logs and checkpoints are dropped); for the official
    backbone its backbone builder is swapped, so that nothing else can differ from the sweep's training."""
    from experiments.training import train

    with tempfile.TemporaryDirectory(prefix="training-parity-") as run_dir:
        if backbone == "ours":
            return train.run_training(config, Path(run_dir))
        built: list[nn.Module] = []

        def build_official(_model: DictConfig) -> nn.Module:  # the official stack of config.model
            built.append(official_backbone(config))
            return built[-1]

        with mock.patch.object(train, "build_backbone_from_config", build_official):
            metrics = train.run_training(config, Path(run_dir))
    if len(built) != 1:
        raise RuntimeError(
            f"run_training built {len(built)} backbones through build_backbone_from_config, expected 1: "
            "the official backbone was not swapped in; update train_run"
        )
    return metrics


def read_cache(path: Path) -> pd.DataFrame:
    if not path.exists():
        return pd.DataFrame(columns=COLUMNS)
    table = pd.read_csv(path, dtype={"config_hash": str, "backbone": str, "model": str, "task": str})
    if list(table.columns) != COLUMNS:
        raise ValueError(
            f"{path}: columns {list(table.columns)}, expected {COLUMNS}; move it away to start a new cache"
        )
    return table


def store_result(path: Path, row: dict) -> None:
    """Append one run's row to the cache CSV, rewriting it atomically."""
    rows = read_cache(path).to_dict("records") + [row]
    write_text_atomic(path, pd.DataFrame(rows, columns=COLUMNS).to_csv(index=False))


def result_row(backbone: str, run: PlannedRun, metrics: dict[str, float], seconds: float) -> dict:
    config = run.config
    return {
        "backbone": backbone,
        "model": config.model.name,
        "task": config.task.name,
        "seed": config.seed,
        "steps": config.trainer.max_steps,
        "config_hash": cache_key(backbone, config),
        METRIC: metrics[METRIC],
        VALIDATION_METRIC: metrics[VALIDATION_METRIC],
        "seconds": round(seconds, 1),
    }


def run_missing(runs: list[PlannedRun], cache: Path, train: Train = train_run) -> None:
    """Train every (run, backbone) the cache lacks, ours then official per run, storing each as it finishes."""
    jobs = [(run, backbone) for run in runs for backbone in BACKBONES]
    cached = set(read_cache(cache)["config_hash"])
    for index, (run, backbone) in enumerate(jobs, start=1):
        label = f"[{index}/{len(jobs)}] {backbone} {run.label} steps={run.config.trainer.max_steps}"
        if cache_key(backbone, run.config) in cached:
            print(f"{label}: cached")
            continue
        print(f"{label}: training", flush=True)
        started = time.perf_counter()
        row = result_row(backbone, run, train(backbone, run.config), time.perf_counter() - started)
        store_result(cache, row)
        print(f"{label}: {METRIC} {row[METRIC]:.3f} in {row['seconds']:.0f} s", flush=True)


# ---- report -----------------------------------------------------------------------------------------------------------


def distribution_row(backbone: str, values: list[float]) -> str:
    """A markdown table row: n, sorted values, mean, std (n - 1), range, runs solved."""
    values = sorted(values)
    mean = sum(values) / len(values)
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1)) if len(values) > 1 else math.nan
    solved = sum(value >= SOLVED_THRESHOLD for value in values)
    return (
        f"| {backbone} | {len(values)} | {', '.join(f'{v:.3f}' for v in values)} | {mean:.3f} | {std:.3f} | "
        f"{values[0]:.3f} to {values[-1]:.3f} | {solved} of {len(values)} |"
    )


def rank_test_lines(ours: list[float], official: list[float]) -> list[str]:
    """Two-sided Mann-Whitney U of ours against official, the smallest p the sample sizes allow, and the verdict."""
    from scipy.stats import mannwhitneyu

    if min(len(ours), len(official)) < 2:
        return [f"rank test: needs 2 or more runs per backbone (ours {len(ours)}, official {len(official)})"]
    test = mannwhitneyu(ours, official, alternative="two-sided")
    smallest = 2 / math.comb(len(ours) + len(official), len(ours))  # exact test, no overlap at all
    return [
        f"Mann-Whitney U = {test.statistic:g}, two-sided p = {test.pvalue:.4f} "
        f"(the smallest p {len(ours)} and {len(official)} runs allow: {smallest:.4f})",
        f"distinguishable at 1%: {'yes' if test.pvalue < SIGNIFICANCE else 'no'}",
    ]


def model_section(model: str, results: pd.DataFrame, architecture: list[str]) -> list[str]:
    values = {
        backbone: results.loc[(results["model"] == model) & (results["backbone"] == backbone), METRIC].tolist()
        for backbone in BACKBONES
    }
    rows = [distribution_row(backbone, values[backbone]) for backbone in BACKBONES if values[backbone]]
    return [
        f"## {model}",
        "",
        *architecture,
        "",
        "| backbone | n | sorted values | mean | std | range | solved |",
        "| --- | ---: | --- | ---: | ---: | --- | --- |",
        *rows,
        "",
        *(f"{line}  " for line in rank_test_lines(values["ours"], values["official"])),
        "",
    ]


def report_markdown(
    check: ParityCheck, runs: list[PlannedRun], cache: pd.DataFrame, architectures: dict[str, list[str]]
) -> str:
    """The report of the check's runs found in the cache (runs missing from it are counted, not guessed)."""
    keys = {cache_key(backbone, run.config) for run in runs for backbone in BACKBONES}
    results = cache[cache["config_hash"].isin(keys)]
    steps = sorted({run.config.trainer.max_steps for run in runs})
    selected = (
        "the checkpoint with the best " + VALIDATION_METRIC
        if runs[0].config.trainer.checkpoint
        else "the final weights"
    )
    lines = [
        "# Training parity with the official xLSTM (xlstm==2.0.6)",
        "",
        f"{ARTIFACT} {SCALE} cells, task {check.task}, {'/'.join(map(str, steps))} steps, seeds "
        f"{', '.join(map(str, check.seeds))}; trained by run_training with our backbone and with the official one. "
        f"Metric: {METRIC} of {selected} (as run_training reports it). Solved: >= {SOLVED_THRESHOLD}. Test: "
        f"two-sided Mann-Whitney U (scipy), distinguishable when p < {SIGNIFICANCE}.",
        "",
    ]
    if len(results) < len(keys):
        lines += [f"**{len(keys) - len(results)} of {len(keys)} runs are missing from the cache.**", ""]
    for model in check.models:
        lines += model_section(model, results, architectures[model])
    return "\n".join(lines)


# ---- command line -----------------------------------------------------------------------------------------------------


def parse_check(argv: list[str] | None) -> ParityCheck:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--models",
        nargs="+",
        choices=MODELS,
        default=DEFAULT_MODELS,
        metavar="MODEL",
        help=f"from {list(MODELS)} (default: {DEFAULT_MODELS})",
    )
    parser.add_argument("--task", choices=mini_tasks(), default="cycle_nav", help="a task of the mini grid")
    parser.add_argument(
        "--seeds",
        nargs="+",
        type=int,
        default=DEFAULT_SEEDS,
        metavar="SEED",
        help=f"runs per backbone and model (default: {DEFAULT_SEEDS})",
    )
    parser.add_argument("--steps", type=int, help="training steps (default: the mini budget of the task's cell)")
    parser.add_argument(
        "--cache",
        type=Path,
        default=CACHE,
        help="the results CSV; the markdown report goes beside it (default: %(default)s)",
    )
    arguments = parser.parse_args(argv)
    if arguments.steps is not None and arguments.steps < 1:
        parser.error(f"--steps {arguments.steps}: must be >= 1")
    return ParityCheck(
        models=arguments.models,
        task=arguments.task,
        seeds=sorted(set(arguments.seeds)),
        steps=arguments.steps,
        cache=arguments.cache,
    )


def main(argv: list[str] | None = None) -> int:
    check = parse_check(argv)
    runs = planned_runs(check)
    architectures = {
        model: architecture_lines(next(run.config for run in runs if run.cell["model"] == model))
        for model in check.models
    }
    for model, lines in architectures.items():
        print("\n".join([f"{model}:", *lines]))
    run_missing(runs, check.cache)
    report = report_markdown(check, runs, read_cache(check.cache), architectures)
    print(report)
    write_text_atomic(check.report_path, report)
    print(f"wrote {check.report_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
