"""Planned grids kept on disk between commands: `list`, `report` and a dry run read an artifact's plan at a scale
(its cells, overrides, run ids and resolved configs) instead of composing and checking it again.

An entry is keyed by everything that could change the plan: the Hydra tree and the size presets (compose_cache.
tree_fingerprint: configs/ but its artifact files, the $XLSTM_SUITE_CONFIGS folders, the Hydra and OmegaConf
versions), the artifact as read from its file (and, for an evaluating artifact, the artifact whose runs it evaluates), the code that plans and
checks (every Python file of experiments/config, tasks and models, and of the task families plugged in by
$XLSTM_SUITE_TASK_FAMILIES), the models the registry builds, the task families, the PyYAML version (run ids hash
its text), the scale and the user's overrides. A plan read from an entry was checked when it was made; what its key
cannot see is checked again: a task family may check files (a local corpus), so every distinct task config of the
plan is. A damaged entry is ignored with a warning and replaced. The entries live in the compose cache's folder
(under ``plans/``); XLSTM_SUITE_COMPOSE_CACHE=off switches both off.
"""

import functools
import hashlib
import importlib.util
import json
import os
import sys
from pathlib import Path

import omegaconf
import yaml

from experiments.atomic import write_text_atomic
from experiments.config import compose_cache
from experiments.config.configuration import ConfigError, extra_config_folders
from experiments.config.planned_run import PlannedRun
from experiments.config.validation import problems_message, task_problems
from experiments.paths import REPOSITORY_ROOT
from models.catalog import known_backbones
from tasks.registry import PLUG_INS_VARIABLE, task_families

PLAN_FORMAT = 1
PLANNING_CODE = ("experiments/config", "tasks", "models")  # folders of the code that plans and checks a run config
RUN_FIELDS = {
    "cell": dict,
    "overrides": list,
    "unavailable": (str, type(None)),
    "run_id": (str, type(None)),
    "config": (dict, type(None)),
    "trained_by": (int, type(None)),
}


def plan_key(artifact, scale: str, extra_overrides: list[str], source=None) -> str | None:
    """The key of an artifact's plan at ``scale`` with the user's overrides (``source``: the artifact an evaluating
    one evaluates); None with the cache switched off."""
    if compose_cache.cache_folder() is None:
        return None
    material = [
        PLAN_FORMAT,
        compose_cache.tree_fingerprint(tuple(extra_config_folders())),
        code_digest(),
        sorted(known_backbones()),
        sorted(task_families()),
        os.environ.get(PLUG_INS_VARIABLE, ""),
        yaml.__version__,
        omegaconf.__version__,
        repr(artifact),
        repr(source),
        scale,
        extra_overrides,
    ]
    return hashlib.sha256(json.dumps(material).encode()).hexdigest()


def code_digest() -> str:
    """The sha256 of every Python file of the planning code and of the modules $XLSTM_SUITE_TASK_FAMILIES names."""
    return code_files_digest(REPOSITORY_ROOT, os.environ.get(PLUG_INS_VARIABLE, ""))


@functools.cache
def code_files_digest(root: Path, plug_ins: str) -> str:
    """``code_digest``, read once per process (`list` plans some fifty grids)."""
    files = sorted(path for folder in PLANNING_CODE for path in (root / folder).rglob("*.py"))
    files += plug_in_files(plug_ins)
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def plug_in_files(plug_ins: str) -> list[Path]:
    files = []
    for entry in filter(None, (entry.strip() for entry in plug_ins.split(","))):
        spec = importlib.util.find_spec(entry.partition(":")[0])  # imported already: task_families() loaded it
        if spec is not None and spec.origin and Path(spec.origin).is_file():
            files.append(Path(spec.origin))
    return files


def entry_path(key: str) -> Path:
    return compose_cache.cache_folder() / "plans" / key[:2] / f"{key}.json"


def load(key: str, trained: list[PlannedRun]) -> list[PlannedRun] | None:
    """The planned runs kept under ``key`` (``trained``: the plan of the artifact an evaluating one evaluates, whose
    runs its runs name), or None; ConfigError where a task config fails its check now."""
    path = entry_path(key)
    if not path.exists():
        return None
    try:
        content = json.loads(path.read_text())
        problem = entry_problem(content, key, len(trained))
    except (OSError, ValueError) as error:
        problem = f"unreadable ({error})"
    if problem is not None:
        print(f"warning: plan cache entry {path} is {problem}; ignored, planning again", file=sys.stderr)
        return None
    runs = [
        PlannedRun(
            content["artifact"],
            content["scale"],
            run["cell"],
            run["overrides"],
            unavailable=run["unavailable"],
            run_id=run["run_id"],
            container=run["config"],
            trained_by=None if run["trained_by"] is None else trained[run["trained_by"]],
        )
        for run in content["runs"]
    ]
    check_tasks(runs)
    return runs


def check_tasks(runs: list[PlannedRun]) -> None:
    """The task family's check of each distinct task config (ConfigError naming the problems)."""
    tasks = {repr(run.container["task"]): run.container["task"] for run in runs if run.container is not None}
    problems = [problem for task in tasks.values() for problem in task_problems(task)]
    if problems:
        raise ConfigError(problems_message(list(dict.fromkeys(problems))))


def entry_problem(content, key: str, trained_runs: int) -> str | None:
    """What makes ``content`` no plan of ``key`` (None if it is one)."""
    if not isinstance(content, dict) or content.get("key") != key or not isinstance(content.get("runs"), list):
        return "not a plan of this key"
    if not (isinstance(content.get("artifact"), str) and isinstance(content.get("scale"), str)):
        return "missing its artifact or scale"
    for index, run in enumerate(content["runs"]):
        wrong = (
            [
                name
                for name, kind in RUN_FIELDS.items()
                if not isinstance(run, dict) or not isinstance(run.get(name, ...), kind)
            ]
            if isinstance(run, dict)
            else list(RUN_FIELDS)
        )
        if wrong:
            return f"a run ({index}) with missing or mistyped {', '.join(wrong)}"
        if (run["config"] is None) != (run["run_id"] is None) or (
            run["trained_by"] is not None and not 0 <= run["trained_by"] < trained_runs
        ):
            return f"a run ({index}) whose config, run id or training run do not fit"
    return None


def store(key: str, runs: list[PlannedRun], trained: list[PlannedRun]) -> None:
    """Keep the plan under ``key``; a plan whose cells or configs JSON would not give back exactly (a tuple, a
    mapping with keys that are not strings) is not kept."""
    if not runs:
        return
    positions = {id(run): index for index, run in enumerate(trained)}
    content = {
        "key": key,
        "artifact": runs[0].artifact,
        "scale": runs[0].scale,
        "runs": [
            {
                "cell": run.cell,
                "overrides": run.overrides,
                "unavailable": run.unavailable,
                "run_id": run.run_id,
                "config": run.container,
                "trained_by": None if run.trained_by is None else positions[id(run.trained_by)],
            }
            for run in runs
        ],
    }
    if not json_exact(content):
        return
    try:
        write_text_atomic(entry_path(key), json.dumps(content))
    except OSError:
        pass  # a read-only home: the cache only saves time


def json_exact(value) -> bool:
    """Whether JSON gives ``value`` back as it is: mappings with string keys, lists, strings, numbers, booleans,
    null."""
    if isinstance(value, dict):
        return all(isinstance(key, str) and json_exact(item) for key, item in value.items())
    if isinstance(value, list):
        return all(json_exact(item) for item in value)
    return value is None or isinstance(value, (str, bool, int, float))
