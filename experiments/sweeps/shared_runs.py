"""Runs shared between artifacts: where an artifact names others under ``shares_runs``, a run of its sweep that one
of them has finished with the same computation is copied into its store instead of being trained again.

The same computation: the two runs' configs are equal but for their ``artifact`` label (a config's only field that
names the artifact; it changes nothing a run computes), i.e. equal computation ids: a figure whose grid is another
figure's row (Figure 5 of the paper is Figure 12's longest-context row).

The copy is the finished run directory with this artifact's config.yaml and cell.json, and its result.json with
this artifact's name and cell and ``copied_from`` (``<artifact>/<run id>`` of the original). It is written under a
temporary name beside the run's directory and renamed into place, so a stopped copy never leaves a half-copied run;
a run whose directory exists already (started or failed here) is left to the sweep.
"""

import json
import shutil
import uuid
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from experiments.config.artifacts import Artifact, PlannedRun, load_artifact
from experiments.config.run_identity import run_id_of
from experiments.sweeps.run_store import RESULT_FILE, finished_result, run_directory, write_json, write_run_inputs

COPIED_FROM = "copied_from"  # result.json's record of the run a shared run was copied from


def computation_id(run: PlannedRun) -> str:
    """The run's id with its config's ``artifact`` label left out: equal for equal computations of two artifacts."""
    return run_id_of({key: value for key, value in run.container.items() if key != "artifact"})


def shared_sources(
    artifact: Artifact, scale: str, overrides: Sequence[str], runs: Sequence[PlannedRun], root: Path
) -> dict[str, Path]:
    """Run id -> the finished run directory of an artifact in ``artifact.shares_runs`` with the same computation,
    for each of ``runs`` that has none of its own (its directory does not exist). The other artifacts are planned at
    ``scale`` with the sweep's ``overrides``; one without that scale shares nothing."""
    todo = {
        computation_id(run): run for run in runs if run.unavailable is None and not run_directory(run, root).exists()
    }
    sources: dict[str, Path] = {}
    for name in artifact.shares_runs:
        other = load_artifact(name)
        if scale not in other.scales or not todo:
            continue
        for other_run in other.runs(scale, overrides):
            if other_run.unavailable is not None:
                continue
            computation = computation_id(other_run)
            run = todo.get(computation)
            source = run_directory(other_run, root)
            if run is not None and finished_result(source) is not None:
                sources[run.run_id] = source
                del todo[computation]
    return sources


def copy_shared_run(run: PlannedRun, source: Path, root: Path) -> Path:
    """Copy the finished run at ``source`` as ``run`` of this artifact (see the module docstring); its directory."""
    target = run_directory(run, root)
    staging = target.with_name(f".{target.name}.copying-{uuid.uuid4().hex[:8]}")
    try:
        shutil.copytree(source, staging)
        write_run_inputs(staging, run)
        result = json.loads((source / RESULT_FILE).read_text())
        result |= {
            "run_id": run.run_id,
            "artifact": run.artifact,
            "cell": run.cell,
            COPIED_FROM: f"{source.parent.name}/{source.name}",
        }
        write_json(staging / RESULT_FILE, result)
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def copy_shared_runs(
    artifact: Artifact,
    scale: str,
    overrides: Sequence[str],
    runs: Sequence[PlannedRun],
    root: Path,
    console: Console,
    dry_run: bool = False,
) -> set[str]:
    """Copy the runs of ``runs`` that an artifact of ``artifact.shares_runs`` has finished (nothing on a dry run,
    which says how many it would copy); the ids of those runs, done now (or on the real run)."""
    if not artifact.shares_runs:
        return set()
    sources = shared_sources(artifact, scale, overrides, runs, root)
    if not sources:
        return set()
    origins = sorted({source.parent.name for source in sources.values()})
    by_id = {run.run_id: run for run in runs}
    if not dry_run:
        for run_id, source in sources.items():
            copy_shared_run(by_id[run_id], source, root)
    runs_were = f"{len(sources)} run{'s' if len(sources) != 1 else ''} " + (
        "would be" if dry_run else ("were" if len(sources) != 1 else "was")
    )
    console.print(
        f"{runs_were} copied from the finished runs of {', '.join(origins)} (the same computation; shares_runs)"
    )
    return set(sources)
