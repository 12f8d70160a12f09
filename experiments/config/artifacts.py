"""Paper artifacts (configs/paper/<name>.yaml): their grids, expanded per scale into planned runs."""

import hashlib
import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from omegaconf import DictConfig, OmegaConf

from experiments.config.cell_composer import CellComposer
from experiments.config.configuration import CONFIGS, ConfigError, compose_run_config, config_yaml, load_yaml
from experiments.config.report_layouts import report_layout
from experiments.config.validation import validate_run_config
from models.catalog import known_backbones

ARTIFACTS = CONFIGS / "paper"
EXTRA_ARTIFACTS_VARIABLE = "XLSTM_SUITE_ARTIFACTS"  # more folders of artifact files (os.pathsep-separated)
SCALES = ("smoke", "mini", "paper")
ARTIFACT_KEYS = ("artifact", "title", "grid", "overrides", "cell_overrides", "selection", "report", "paper", "scales")
# A scale's settings; ``reading``: what its results show and what they cannot, printed on its report page
SCALE_KEYS = ("grid", "overrides", "cell_overrides", "reading")
MODEL_NOT_REGISTERED = "not in the model registry yet (the baseline zoo issue adds it)"


@dataclass
class PlannedRun:
    """One cell of an artifact's grid at one scale; ``config`` and ``run_id`` only when it is available."""

    artifact: str
    scale: str
    cell: dict[str, Any]
    overrides: list[str]
    unavailable: str | None = None
    config: DictConfig | None = None
    run_id: str | None = None

    @property
    def label(self) -> str:
        """The cell as ``key=value`` pairs, e.g. ``model=xlstm_1_0 task=parity optim.lr=0.001 seed=0``."""
        return " ".join(f"{key}={override_value(value)}" for key, value in self.cell.items())


@dataclass
class Artifact:
    """A paper table or figure: the sweep behind it, its selection rule, its report and its scales."""

    name: str
    title: str  # may name config values of the scale, e.g. "lengths {task.eval_min_length}-{task.eval_max_length}"
    grid: dict[str, list]
    overrides: list[str]
    selection: dict
    report: dict
    scales: dict[str, dict]
    # grid key -> value -> overrides for those cells only, e.g. {"model": {"xlstm_0_1": [sLSTM options]}}
    cell_overrides: dict[str, dict[str, list[str]]]
    # what the paper prints for the artifact: ``unprinted`` (why it prints no numbers, if so) and ``findings``
    # (experiments.reports.findings)
    paper: dict = field(default_factory=dict)

    @property
    def layout(self):
        """The typed report section: its kind and how it places the cells (experiments.config.report_layouts)."""
        return report_layout(self.report)

    def grid_of(self, scale: str) -> dict[str, list]:
        """The base grid with the keys the scale's grid replaces (new keys go last)."""
        check_scale(scale)
        return self.grid | self.scales.get(scale, {}).get("grid", {})

    def overrides_of(self, scale: str) -> list[str]:
        check_scale(scale)
        return list(self.scales.get(scale, {}).get("overrides", []))

    def cell_overrides_of(self, cell: dict[str, Any], table: dict[str, dict[str, list[str]]]) -> list[str]:
        """The overrides a cell_overrides table holds for this cell's grid values."""
        return [override for key, value in cell.items() for override in (table.get(key) or {}).get(value, [])]

    def runs(self, scale: str, extra_overrides: Sequence[str] = ()) -> list[PlannedRun]:
        """Every cell of the scale's grid in a stable order, available ones composed (ConfigError on bad input).

        Overrides, later ones winning: the cell's grid values, the artifact's cell overrides, the artifact's
        overrides, the scale's overrides, the scale's cell overrides, artifact and scale names, the user's."""
        grid = self.grid_of(scale)
        scale_cell_overrides = self.scales.get(scale, {}).get("cell_overrides") or {}
        names = [f"artifact={self.name}", f"scale={scale}"]
        cells = []
        for values in itertools.product(*grid.values()):
            cell = dict(zip(grid, values))
            overrides = [
                *(f"{key}={override_value(value)}" for key, value in cell.items()),
                *self.cell_overrides_of(cell, self.cell_overrides),
                *self.overrides,
                *self.overrides_of(scale),
                *self.cell_overrides_of(cell, scale_cell_overrides),
                *names,
                *extra_overrides,
            ]
            cells.append((cell, overrides))
        compose = CellComposer(value_keys=list(grid))
        runs: list[PlannedRun | None] = [None] * len(cells)
        for index in models_first([cell for cell, _ in cells]):
            runs[index] = plan_run(self.name, scale, *cells[index], compose=compose)
        check_distinct(runs, extra_overrides)
        return runs


def artifact_files() -> dict[str, Path]:
    """Artifact name -> its YAML: the paper's (configs/paper) and those in $XLSTM_SUITE_ARTIFACTS folders."""
    folders = [ARTIFACTS, *(Path(p) for p in os.environ.get(EXTRA_ARTIFACTS_VARIABLE, "").split(os.pathsep) if p)]
    return {path.stem: path for folder in folders for path in sorted(folder.glob("*.yaml"))}


def known_artifacts() -> list[str]:
    return sorted(artifact_files())


def load_artifact(name: str) -> Artifact:
    files = artifact_files()
    if name not in files:
        raise ValueError(f"unknown artifact {name!r}; valid choices: {sorted(files)}")
    return artifact_from_yaml(files[name])


def artifact_from_yaml(path: Path) -> Artifact:
    content = OmegaConf.to_container(load_yaml(path), resolve=True)
    unknown = sorted(set(content) - set(ARTIFACT_KEYS))
    if unknown:
        raise ValueError(f"{path}: unknown keys {unknown}; valid keys: {list(ARTIFACT_KEYS)}")
    if content.get("artifact") != path.stem:
        raise ValueError(f"{path}: artifact {content.get('artifact')!r} must equal the file name {path.stem!r}")
    unknown_scales = sorted(set(content.get("scales") or {}) - set(SCALES))
    if unknown_scales:
        raise ValueError(f"{path}: unknown scales {unknown_scales}; valid choices: {list(SCALES)}")
    for scale, settings in (content.get("scales") or {}).items():
        unknown = sorted(set(settings or {}) - set(SCALE_KEYS))
        if unknown:
            raise ValueError(f"{path}: unknown keys {unknown} of scale {scale}; valid keys: {list(SCALE_KEYS)}")
    if content.get("report"):
        try:
            report_layout(content["report"])
        except ValueError as error:
            raise ValueError(f"{path}: {error}") from None
    return Artifact(
        name=content["artifact"],
        title=content.get("title", content["artifact"]),
        grid=content.get("grid") or {},
        overrides=content.get("overrides") or [],
        selection=content.get("selection") or {},
        report=content.get("report") or {},
        scales={scale: settings or {} for scale, settings in (content.get("scales") or {}).items()},
        cell_overrides=content.get("cell_overrides") or {},
        paper=content.get("paper") or {},
    )


def check_scale(scale: str) -> None:
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}; valid choices: {list(SCALES)}")


def models_first(cells: list[dict[str, Any]]) -> list[int]:
    """Cell indices, the first cell of every model before the others: an override that breaks one model's config
    is then found after at most one compose per model."""
    firsts = {}
    for index, cell in enumerate(cells):
        firsts.setdefault(cell.get("model"), index)
    first_indices = set(firsts.values())
    return [*firsts.values(), *(index for index in range(len(cells)) if index not in first_indices)]


def plan_run(artifact: str, scale: str, cell: dict[str, Any], overrides: list[str],
             compose: Callable[[list[str]], DictConfig] = compose_run_config) -> PlannedRun:
    """Compose the cell's config (bad overrides raise here), unless its model is not built yet."""
    model = cell.get("model")
    if model is not None and not (CONFIGS / "model" / f"{model}.yaml").exists():
        return PlannedRun(artifact, scale, cell, overrides, unavailable=MODEL_NOT_REGISTERED)
    config = compose(overrides)
    if model is not None and not model_is_registered(model):
        return PlannedRun(artifact, scale, cell, overrides, unavailable=MODEL_NOT_REGISTERED)
    validate_run_config(config)
    return PlannedRun(artifact, scale, cell, overrides, config=config, run_id=run_id_of(config))


def model_is_registered(model: str) -> bool:
    return model in known_backbones()


def run_id_of(config: DictConfig) -> str:
    """The first 12 hex digits of the sha256 of the resolved config's YAML (keys sorted)."""
    return hashlib.sha256(config_yaml(config).encode()).hexdigest()[:12]


def check_distinct(runs: list[PlannedRun], extra_overrides: Sequence[str]) -> None:
    """Overrides that pin a grid key make cells identical; refuse instead of running one config twice."""
    first_cell_of: dict[str, dict] = {}
    for run in runs:
        if run.run_id is None:
            continue
        if run.run_id in first_cell_of:
            raise ConfigError(
                f"overrides {list(extra_overrides)} make grid cells {first_cell_of[run.run_id]} and {run.cell} "
                "the same run; drop the override of a grid key"
            )
        first_cell_of[run.run_id] = run.cell


def override_value(value: Any, quote_strings: bool = False) -> str:
    """A value in Hydra's override syntax (``null``, ``true``, ``[1,2]``, ``{a:1}``, optionally ``'text'``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(override_value(item, quote_strings) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{key}:{override_value(item, quote_strings)}" for key, item in value.items()) + "}"
    if isinstance(value, str) and quote_strings:
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return str(value)
