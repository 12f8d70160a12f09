"""Paper artifacts (configs/paper/<name>.yaml): their grids, expanded per scale into planned runs."""

import dataclasses
import itertools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from experiments.config import plan_cache
from experiments.config.configuration import ARTIFACTS, CONFIGS, ConfigError
from experiments.config.evaluation_kinds import EVALUATION_KINDS, resolved_settings, settings_problems, task_problems
from experiments.config.planned_run import PlannedRun, override_value
from experiments.config.report_layouts import report_layout
from experiments.config.run_identity import run_id_of
from experiments.config.run_schema import CHECKPOINTS, INITIAL
from experiments.config.validation import validate_run_config
from experiments.config.yaml_reading import read_yaml
from models.catalog import known_backbones

if TYPE_CHECKING:  # Hydra is imported only to compose what the plan cache lacks
    from experiments.config.cell_composer import CellComposer

EXTRA_ARTIFACTS_VARIABLE = "XLSTM_SUITE_ARTIFACTS"  # more folders of artifact files (os.pathsep-separated)
SCALES = ("smoke", "mini", "paper")
ARTIFACT_KEYS = (
    "artifact",
    "title",
    "evaluates",
    "grid",
    "cell_grids",
    "exclude",
    "overrides",
    "cell_overrides",
    "selection",
    "report",
    "paper",
    "scales",
    "shares_runs",
)
# A scale's settings; ``reading``: what its results show and what they cannot, printed on its report page
SCALE_KEYS = ("evaluates", "grid", "cell_grids", "exclude", "overrides", "cell_overrides", "reading", "report")
EVALUATES_KEYS = ("artifact", "where", "checkpoint", "kind", "settings")
SETTINGS_KEY = "evaluate.settings."  # a grid key of an evaluating artifact that sets one of its kind's settings
MODEL_NOT_REGISTERED = "not in the model registry yet (the baseline zoo issue adds it)"


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
    # grid key -> value -> a grid of more keys for the cells with that value only, e.g. settings that go together
    # ({"task.context_length": {64: {"task.num_kv_pairs": [4]}}}) or a learning-rate set per batch size
    cell_grids: dict[str, dict[Any, dict[str, list]]] = field(default_factory=dict)
    # partial cells to leave out: each rule maps cell keys to a value or a list of values; a cell matching every
    # key of a rule is dropped (e.g. {"model": "llama", "task.context_length": [756, 1024]})
    exclude: list[dict[str, Any]] = field(default_factory=list)
    # evaluation only: ``artifact`` (whose runs are evaluated), ``where`` (which of its cells: key -> value or list;
    # default every cell), ``checkpoint`` (best, last, or initial: untrained, for kinds measuring time and memory),
    # ``kind`` and ``settings`` (an evaluation kind by name and its settings, experiments.config.evaluation_kinds);
    # each of those runs is evaluated once per cell of this artifact's grid (one cell without a grid), whose values
    # replace the training cell's (e.g. a longer context length) or, for keys ``evaluate.settings.<name>``, the
    # kind's settings, with no training
    evaluates: dict[str, Any] = field(default_factory=dict)
    # artifacts whose finished runs of the same computation (the run config less its ``artifact`` label) a sweep of
    # this one copies instead of training again (experiments.sweeps.shared_runs), e.g. a figure's row that is
    # another figure
    shares_runs: list[str] = field(default_factory=list)

    @property
    def declared_scales(self) -> list[str]:
        """The scales the artifact file declares (under ``scales:``), in the order smoke, mini, paper."""
        return [scale for scale in SCALES if scale in self.scales]

    def check_declared(self, scale: str) -> None:
        """ConfigError naming the artifact's scales unless it declares ``scale``: a scale it lacks is refused, never
        planned as the paper's grid."""
        check_scale(scale)
        if scale not in self.scales:
            raise ConfigError(f"artifact {self.name!r} has no {scale!r} scale; its scales: {self.declared_scales}")

    @property
    def layout(self):
        """The typed report section: its kind and how it places the cells (experiments.config.report_layouts)."""
        return report_layout(self.report)

    def at_scale(self, scale: str) -> "Artifact":
        """The artifact with the report keys the scale's ``report`` replaces (e.g. stand-in cells of a smoke scale)."""
        check_scale(scale)
        return dataclasses.replace(self, report=self.report | (self.scales.get(scale, {}).get("report") or {}))

    def grid_of(self, scale: str) -> dict[str, list]:
        """The base grid with the keys the scale's grid replaces (new keys go last)."""
        check_scale(scale)
        return self.grid | self.scales.get(scale, {}).get("grid", {})

    def cell_grids_of(self, scale: str) -> dict[str, dict[Any, dict[str, list]]]:
        """The base cell grids with the keys the scale's cell_grids replace."""
        check_scale(scale)
        return self.cell_grids | (self.scales.get(scale, {}).get("cell_grids") or {})

    def exclude_of(self, scale: str) -> list[dict[str, Any]]:
        """The scale's exclusion rules if it has its own, else the artifact's."""
        check_scale(scale)
        settings = self.scales.get(scale, {})
        return list(settings["exclude"] or []) if "exclude" in settings else list(self.exclude)

    def evaluates_of(self, scale: str) -> dict[str, Any]:
        """The evaluation section with the keys the scale's ``evaluates`` replaces (and the settings it replaces,
        the others kept); {} for a training artifact."""
        check_scale(scale)
        if not self.evaluates:
            return {}
        scaled = self.scales.get(scale, {}).get("evaluates") or {}
        settings = (
            {"settings": (self.evaluates.get("settings") or {}) | scaled["settings"]}
            if isinstance(scaled.get("settings"), dict)
            else {}
        )
        return self.evaluates | scaled | settings

    def cells(self, scale: str) -> list[dict[str, Any]]:
        """The scale's cells in a stable order: the product of its grid, each cell extended by the product of the
        cell grids of its values (in the order of ``cell_grids``; a cell grid may key on an earlier one's keys),
        less the excluded ones. ValueError naming the problem for a cell grid or exclusion that does not fit."""
        grid = self.grid_of(scale)
        cells = [dict(zip(grid, values)) for values in itertools.product(*grid.values())]
        known = list(grid)
        for key, table in self.cell_grids_of(scale).items():
            if key not in known:
                raise ValueError(
                    f"cell_grids.{key}: {key!r} is not a key of the grid (at scale {scale!r}) nor of an "
                    f"earlier cell grid; valid keys: {known}"
                )
            entries = {override_value(value): value for value in table}
            expanded = []
            for cell in cells:
                value = override_value(cell[key])
                if value not in entries:
                    raise ValueError(
                        f"cell_grids.{key} has no grid for {key}={value} (at scale {scale!r}); it has "
                        f"grids for {sorted(entries)}"
                    )
                subcells = subgrid_cells(f"cell_grids.{key}.{value}", table[entries[value]], cell)
                expanded += [cell | subcell for subcell in subcells]
                known += [name for subcell in subcells for name in subcell if name not in known]
            cells = expanded
        rules = self.exclude_of(scale)
        for index, rule in enumerate(rules):
            check_exclusion(f"exclude[{index}]", rule, cells, known, scale)
        return [cell for cell in cells if not any(excluded(cell, rule) for rule in rules)]

    def cell_keys(self, scale: str) -> list[str]:
        """Every key of the scale's cells: the grid's, then those the cell grids add."""
        return list(dict.fromkeys(key for cell in self.cells(scale) for key in cell)) or list(self.grid_of(scale))

    def overrides_of(self, scale: str) -> list[str]:
        check_scale(scale)
        return list(self.scales.get(scale, {}).get("overrides", []))

    def cell_overrides_of(self, cell: dict[str, Any], table: dict[str, dict[str, list[str]]]) -> list[str]:
        """The overrides a cell_overrides table holds for this cell's grid values."""
        return [override for key, value in cell.items() for override in (table.get(key) or {}).get(value, [])]

    def runs(self, scale: str, extra_overrides: Sequence[str] = ()) -> list[PlannedRun]:
        """Every cell of the scale's grid in a stable order, available ones composed and checked (ConfigError on bad
        input); a plan made before with nothing changed is read from the plan cache (experiments.config.plan_cache).

        Overrides, later ones winning: the cell's grid values, the artifact's cell overrides, the artifact's
        overrides, the scale's overrides, the scale's cell overrides, artifact and scale names, the user's.
        An evaluating artifact (``evaluates``) plans one run per training run and cell of its grid instead."""
        self.check_declared(scale)
        extra_overrides = list(extra_overrides)
        source = self.evaluated_source(scale) if self.evaluates else None
        key = plan_cache.plan_key(self, scale, extra_overrides, source)
        trained = source.runs(scale, extra_overrides) if source is not None else []
        cached = plan_cache.load(key, trained) if key is not None else None
        if cached is not None:
            return cached
        from experiments.config.cell_composer import CellComposer  # Hydra: only to compose what is not cached

        composer = CellComposer()
        if source is None:
            runs = self.training_runs(scale, extra_overrides, composer)
        else:
            runs = self.evaluation_runs(scale, extra_overrides, source, trained, composer)
        if key is not None:
            plan_cache.store(key, runs, trained)
        return runs

    def training_runs(self, scale: str, extra_overrides: list[str], composer: "CellComposer") -> list[PlannedRun]:
        """A training artifact's runs at ``scale``, each composed by ``composer`` and checked (``runs``' order)."""
        scale_cell_overrides = self.scales.get(scale, {}).get("cell_overrides") or {}
        names = [f"artifact={self.name}", f"scale={scale}"]
        cells = []
        for cell in self.cells(scale):
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
        runs: list[PlannedRun | None] = [None] * len(cells)
        order = models_first([cell for cell, _ in cells])
        composer.prefetch([cells[index][1] for index in order])  # stops at the first cell that does not compose
        for index in order:
            runs[index] = plan_run(self.name, scale, *cells[index], compose=composer)
        check_distinct(runs, extra_overrides)
        return runs

    def evaluated_source(self, scale: str) -> "Artifact":
        """The training artifact whose runs this evaluating artifact evaluates at ``scale`` (ConfigError where it has
        no such scale or evaluates itself)."""
        source = load_artifact(self.evaluates_of(scale)["artifact"])
        if scale not in source.scales:
            raise ConfigError(
                f"artifact {self.name!r} evaluates the runs of {source.name!r}, which has no {scale!r} "
                f"scale; its scales: {source.declared_scales}"
            )
        if source.evaluates:
            raise ConfigError(f"{self.name}: evaluates.artifact={source.name!r} is itself an evaluating artifact")
        return source

    def evaluation_runs(
        self,
        scale: str,
        extra_overrides: list[str],
        source: "Artifact",
        trained: list[PlannedRun],
        composer: "CellComposer",
    ) -> list[PlannedRun]:
        """Per training run of ``source`` at this scale (``trained``) whose cell matches ``evaluates.where`` (the
        user's overrides apply to those too), per cell of this grid: the training run's overrides with this cell's
        values, this artifact's overrides and the ``evaluate`` section naming the training run."""
        evaluates = self.evaluates_of(scale)
        where = evaluates.get("where") or {}
        if where:
            try:
                check_exclusion("evaluates.where", where, source.cells(scale), source.cell_keys(scale), scale)
            except ValueError as error:
                raise ConfigError(f"{self.name}: {error} (the cells of {source.name})") from None
        kind = (
            {}
            if evaluates.get("kind") is None
            else {
                "kind": evaluates["kind"],
                "settings": resolved_settings(evaluates["kind"], evaluates.get("settings")),
            }
        )
        names = {f"artifact={source.name}", f"scale={scale}"}
        cells = self.cells(scale)
        drafts = []  # (training run, cell, the overrides composed, the evaluate section)
        for training in (run for run in trained if excluded(run.cell, where)):
            for cell in cells:
                kept = [
                    override
                    for override in training.overrides
                    if override not in names
                    and override not in extra_overrides
                    and override.split("=", 1)[0] not in cell
                ]
                # the section as an OmegaConf tree holds it (lists, not tuples), as the run config keeps it
                section = OmegaConf.to_container(
                    OmegaConf.create(
                        {
                            "artifact": source.name,
                            "scale": scale,
                            "run_id": training.run_id,
                            "checkpoint": evaluates.get("checkpoint", "best"),
                            "cell": training.label,
                            **cell_settings(kind, cell),
                        }
                    )
                )
                composed = [
                    *kept,
                    *(
                        f"{key}={override_value(value)}"
                        for key, value in cell.items()
                        if not key.startswith(SETTINGS_KEY)
                    ),
                    *self.overrides,
                    *self.overrides_of(scale),
                    f"artifact={self.name}",
                    f"scale={scale}",
                    *extra_overrides,
                ]
                drafts.append((training, cell, composed, section))
        composer.prefetch([composed for training, _, composed, _ in drafts if training.unavailable is None])
        planned = []
        for training, cell, composed, section in drafts:
            overrides = [
                *composed,
                *(f"+evaluate.{key}={override_value(value, quote_strings=True)}" for key, value in section.items()),
            ]
            run = PlannedRun(
                self.name,
                scale,
                training.cell | cell,
                overrides,
                unavailable=training.unavailable,
                trained_by=training,
            )
            if training.unavailable is None:
                # one compose per structure (the evaluate section, different in every run, is set afterwards)
                container = composer(composed)
                container["evaluate"] = section
                validate_run_config(container)
                if kind:
                    problems = task_problems(section, container["task"])
                    if problems:
                        raise ConfigError(f"{self.name} ({scale}): " + "; ".join(problems))
                run = PlannedRun(
                    self.name,
                    scale,
                    training.cell | cell,
                    overrides,
                    trained_by=training,
                    run_id=run_id_of(container),
                    container=container,
                )
            planned.append(run)
        check_distinct(planned, extra_overrides)
        return planned


def artifact_files() -> dict[str, Path]:
    """Artifact name -> its YAML: the paper's (configs/paper) and those in $XLSTM_SUITE_ARTIFACTS folders."""
    folders = [ARTIFACTS, *(Path(p) for p in os.environ.get(EXTRA_ARTIFACTS_VARIABLE, "").split(os.pathsep) if p)]
    return {path.stem: path for folder in folders for path in sorted(folder.glob("*.yaml"))}


def known_artifacts() -> list[str]:
    return sorted(artifact_files())


def named_artifacts(name: str, scale: str) -> list[str]:
    """The artifacts a command's ARTIFACT names at ``scale``: the one named, or for 'all' every artifact that declares
    the scale (the others have nothing planned there)."""
    if name != "all":
        return [name]
    return [known for known in known_artifacts() if scale in load_artifact(known).scales]


def load_artifact(name: str) -> Artifact:
    files = artifact_files()
    if name not in files:
        raise ValueError(f"unknown artifact {name!r}; valid choices: {sorted(files)}")
    return artifact_from_yaml(files[name])


def read_artifact_file(path: Path) -> dict:
    """The mapping an artifact file holds; ValueError naming the file and its problem (one line): it cannot be read,
    is not UTF-8 text or not YAML (the parser's problem and where), an interpolation fails, or it holds no mapping."""
    try:
        content = read_yaml(path)
    except OSError as error:
        raise ValueError(f"{path}: cannot be read ({error.strerror})") from None
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    except yaml.YAMLError as error:
        raise ValueError(f"{path}: not valid YAML: {yaml_problem(error)}") from None
    except OmegaConfBaseException as error:
        raise ValueError(f"{path}: {str(error).splitlines()[0]}") from None
    if not isinstance(content, dict):
        raise ValueError(f"{path}: holds a {type(content).__name__}, not a mapping of artifact keys")
    return content


def yaml_problem(error: yaml.YAMLError) -> str:
    """The YAML parser's problem and where it is, in one line: "expected ',' or ']' ... (line 3, column 1)"."""
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    return f"{problem} (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else problem


def artifact_from_yaml(path: Path) -> Artifact:
    content = read_artifact_file(path)
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
            raise ValueError(f"{path}: scales.{scale}: unknown keys {unknown}; valid keys: {list(SCALE_KEYS)}")
    if content.get("report"):
        for scale in SCALES:
            try:
                report_layout(content["report"] | ((content.get("scales") or {}).get(scale) or {}).get("report", {}))
            except ValueError as error:
                raise ValueError(f"{path}: {error} (at scale {scale!r})") from None
    artifact = Artifact(
        name=content["artifact"],
        title=content.get("title", content["artifact"]),
        grid=content.get("grid") or {},
        overrides=content.get("overrides") or [],
        selection=content.get("selection") or {},
        report=content.get("report") or {},
        scales={scale: settings or {} for scale, settings in (content.get("scales") or {}).items()},
        cell_overrides=content.get("cell_overrides") or {},
        paper=content.get("paper") or {},
        cell_grids=content.get("cell_grids") or {},
        exclude=content.get("exclude") or [],
        evaluates=content.get("evaluates") or {},
        shares_runs=shared_artifacts(content.get("shares_runs"), path),
    )
    for scale, settings in artifact.scales.items():
        scaled = (settings or {}).get("evaluates")
        if scaled is not None and not isinstance(scaled, dict):
            raise ValueError(
                f"{path}: scales.{scale}.evaluates: must be a mapping with the keys "
                f"{list(EVALUATES_KEYS)}, got {scaled!r}"
            )
        if scaled and not artifact.evaluates:
            raise ValueError(
                f"{path}: scales.{scale}.evaluates: replaces keys of the artifact's evaluates, which it "
                "has not (a training artifact)"
            )
    for where, evaluates in [
        ("evaluates", artifact.evaluates),
        *(
            (f"scales.{scale}.evaluates (with the artifact's)", artifact.evaluates_of(scale))
            for scale, settings in artifact.scales.items()
            if (settings or {}).get("evaluates")
        ),
    ]:
        problem = evaluates_problem(evaluates, base=True)
        if problem:
            raise ValueError(f"{path}: {where}: {problem}")
    for scale in SCALES:  # cell grids and exclusions are checked when the artifact loads, not when a sweep starts
        try:
            artifact.cells(scale)
        except ValueError as error:
            raise ValueError(f"{path}: {error}") from None
    return artifact


def shared_artifacts(names: Any, path: Path) -> list[str]:
    """The ``shares_runs`` list: names of other artifact files; ValueError naming the valid choices otherwise."""
    if names is None:
        return []
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise ValueError(f"{path}: shares_runs: must be a list of artifact names, got {names!r}")
    choices = sorted(set(artifact_files()) - {path.stem})
    unknown = [name for name in names if name not in choices]
    if unknown:
        raise ValueError(f"{path}: shares_runs: unknown artifacts {unknown}; valid choices: {choices}")
    return names


def evaluates_problem(evaluates: Any, base: bool) -> str | None:
    """What is wrong with an ``evaluates`` section (None if it is absent or sound); the base one needs ``artifact``
    (and ``where`` without a ``kind``: a grid of other task settings names the cells it evaluates), a scale's may
    replace any of its keys (its ``settings`` the whole mapping)."""
    if evaluates is None or evaluates == {}:
        return None
    if not isinstance(evaluates, dict):
        return f"must be a mapping with the keys {list(EVALUATES_KEYS)}, got {evaluates!r}"
    unknown = sorted(set(evaluates) - set(EVALUATES_KEYS))
    if unknown:
        return f"unknown keys {unknown}; valid keys: {list(EVALUATES_KEYS)}"
    missing = [
        key for key in ("artifact", *(() if "kind" in evaluates else ("where",))) if base and key not in evaluates
    ]
    if missing:
        return f"missing {missing} (the training artifact and which of its cells to evaluate)"
    if "settings" in evaluates and "kind" not in evaluates and base:
        return "settings need a kind (the evaluation they configure)"
    if "kind" in evaluates:
        problems = settings_problems(evaluates["kind"], evaluates.get("settings"), "evaluates")
        if problems:
            return "; ".join(problems)
    if "artifact" in evaluates and evaluates["artifact"] not in artifact_files():
        return f"artifact={evaluates['artifact']!r} is not an artifact; valid choices: {known_artifacts()}"
    if "where" in evaluates and not isinstance(evaluates["where"], dict):
        return f"where={evaluates['where']!r} must map cell keys to a value or a list of values"
    if evaluates.get("checkpoint", "best") not in CHECKPOINTS:
        return f"checkpoint={evaluates['checkpoint']!r} is not valid; valid choices: {list(CHECKPOINTS)}"
    if (
        base
        and evaluates.get("checkpoint") == INITIAL
        and not (evaluates.get("kind") in EVALUATION_KINDS and EVALUATION_KINDS[evaluates["kind"]].initial_weights)
    ):
        measuring = sorted(name for name, kind in EVALUATION_KINDS.items() if kind.initial_weights)
        return (
            f"checkpoint='initial' (untrained weights) needs a kind that measures what weights do not change; "
            f"kind={evaluates.get('kind')!r}; valid choices: {measuring}"
        )
    return None


def cell_settings(kind: dict, cell: dict[str, Any]) -> dict:
    """The evaluation kind and its settings with the cell's ``evaluate.settings.<name>`` values in them (ConfigError
    for such a key without a kind)."""
    values = {key.removeprefix(SETTINGS_KEY): value for key, value in cell.items() if key.startswith(SETTINGS_KEY)}
    if values and not kind:
        raise ConfigError(
            f"grid keys {[SETTINGS_KEY + name for name in values]} set an evaluation kind's settings; "
            "evaluates names no kind"
        )
    return kind | ({"settings": kind["settings"] | values} if values else {})


def subgrid_cells(where: str, subgrid: Any, cell: dict[str, Any]) -> list[dict[str, Any]]:
    """What a cell grid adds to ``cell``: the product of a mapping of keys to lists of values, or each of a list of
    cells (values that go together, e.g. a model size with its learning rate); nothing for an empty entry.
    ValueError naming a bad entry."""
    if subgrid is None:
        return [{}]
    if isinstance(subgrid, list):
        if not subgrid or not all(isinstance(entry, dict) and entry for entry in subgrid):
            raise ValueError(f"{where} must be a non-empty list of cells (key -> value), got {subgrid!r}")
        if len({tuple(entry) for entry in subgrid}) != 1:
            raise ValueError(f"{where}: every cell of the list must have the same keys, got {subgrid!r}")
        check_new_keys(where, subgrid[0], cell)
        return [dict(entry) for entry in subgrid]
    if not isinstance(subgrid, dict):
        raise ValueError(f"{where} must map keys to lists of values or be a list of cells, got {subgrid!r}")
    check_new_keys(where, subgrid, cell)
    for name, values in subgrid.items():
        if not isinstance(values, list) or not values:
            raise ValueError(f"{where}.{name} must be a non-empty list of values, got {values!r}")
    return [dict(zip(subgrid, values)) for values in itertools.product(*subgrid.values())]


def check_new_keys(where: str, keys: dict[str, Any], cell: dict[str, Any]) -> None:
    for name in keys:
        if name in cell:
            raise ValueError(f"{where}: {name!r} is already a key of the cell {cell}; a cell grid adds new keys only")


def check_exclusion(where: str, rule: Any, cells: list[dict[str, Any]], known: list[str], scale: str) -> None:
    """A rule names cell keys and, for each, values that some cell has (a typo would exclude nothing)."""
    if not isinstance(rule, dict) or not rule:
        raise ValueError(f"{where} must map cell keys to a value or a list of values, got {rule!r}")
    for key, wanted in rule.items():
        if key not in known:
            raise ValueError(f"{where}: {key!r} is not a cell key (at scale {scale!r}); valid keys: {known}")
        present = {override_value(cell[key]) for cell in cells if key in cell}
        for value in wanted if isinstance(wanted, list) else [wanted]:
            if override_value(value) not in present:
                raise ValueError(
                    f"{where}: no cell has {key}={override_value(value)} (at scale {scale!r}); its "
                    f"values: {sorted(present)}"
                )


def excluded(cell: dict[str, Any], rule: dict[str, Any]) -> bool:
    return all(
        key in cell
        and override_value(cell[key])
        in {override_value(value) for value in (wanted if isinstance(wanted, list) else [wanted])}
        for key, wanted in rule.items()
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


def plan_run(
    artifact: str, scale: str, cell: dict[str, Any], overrides: list[str], compose: Callable[[list[str]], dict]
) -> PlannedRun:
    """Compose the cell's config as plain containers (bad overrides raise here) and check it, unless its model is not
    built yet."""
    model = cell.get("model")
    if model is not None and not (CONFIGS / "model" / f"{model}.yaml").exists():
        return PlannedRun(artifact, scale, cell, overrides, unavailable=MODEL_NOT_REGISTERED)
    container = compose(overrides)
    if model is not None and not model_is_registered(container["model"]["name"]):  # a model config names its backbone
        return PlannedRun(artifact, scale, cell, overrides, unavailable=MODEL_NOT_REGISTERED)
    validate_run_config(container)
    return PlannedRun(artifact, scale, cell, overrides, run_id=run_id_of(container), container=container)


def model_is_registered(model: str) -> bool:
    return model in known_backbones()


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
