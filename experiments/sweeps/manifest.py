"""A submitit launch's manifest: the runs of one array job, written by the sweep, read by each array element
(experiments.sweeps.hydra_worker): element ``index`` executes ``runs[index]``."""

import json
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from omegaconf import OmegaConf

from experiments.config.artifacts import PlannedRun
from experiments.sweeps.run_store import run_directory

LAUNCHES = ".launches"  # per artifact: one folder per submitit launch (manifest, submitit's and Hydra's logs)


def launch_directory(run: PlannedRun, root: Path) -> Path:
    """<root>/<scale>/<artifact>/.launches/<time>-<pid>: a launch's manifest and logs."""
    return root / run.scale / run.artifact / LAUNCHES / datetime.now().strftime(f"%Y%m%d-%H%M%S-{os.getpid()}")


@dataclass(frozen=True)
class Manifest:
    """The runs of one submitit launch; array job ``index`` executes ``runs[index]``."""

    root: Path
    run_function: str
    stale_after_seconds: float
    runs: list[PlannedRun]


def write_manifest(path: Path, manifest: Manifest) -> Path:
    content = {
        "root": str(manifest.root),
        "run_function": manifest.run_function,
        "stale_after_seconds": manifest.stale_after_seconds,
        "runs": [manifest_entry(run, manifest.root) for run in manifest.runs],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(content, indent=2) + "\n")
    return path


def manifest_entry(run: PlannedRun, root: Path) -> dict:
    return {
        "artifact": run.artifact,
        "scale": run.scale,
        "run_id": run.run_id,
        "run_dir": str(run_directory(run, root)),  # for people reading the manifest
        "cell": run.cell,
        "overrides": run.overrides,
        "config": OmegaConf.to_container(run.config),
    }


def read_manifest(path: Path) -> Manifest:
    content = json.loads(Path(path).read_text())
    runs = [
        PlannedRun(
            entry["artifact"],
            entry["scale"],
            entry["cell"],
            entry["overrides"],
            config=OmegaConf.create(entry["config"]),
            run_id=entry["run_id"],
        )
        for entry in content["runs"]
    ]
    return Manifest(Path(content["root"]), content["run_function"], content["stale_after_seconds"], runs)
