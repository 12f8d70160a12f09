"""The run store: ``results/runs/<scale>/<artifact>/<run_id>/``, and reading it back as a pandas DataFrame.

A run directory holds ``config.yaml`` (resolved config), ``cell.json`` (grid cell and overrides),
``metrics.csv`` (written by the run function), ``output.log`` (the run's stdout and stderr),
``result.json`` only when the run finished (written atomically) or ``error.json`` when it failed,
and ``claim.json`` while a worker trains it.
"""

import json
import socket
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from experiments.artifacts import PlannedRun
from experiments.atomic import write_text_atomic
from experiments.claims import CLAIM_FILE, DEFAULT_STALE_AFTER_SECONDS, Claim, read_claim, try_claim
from experiments.configuration import config_yaml
from experiments.paths import RESULTS

if TYPE_CHECKING:
    import pandas as pd

RUN_STORE = RESULTS / "runs"
CONFIG_FILE = "config.yaml"
CELL_FILE = "cell.json"
RESULT_FILE = "result.json"
ERROR_FILE = "error.json"
OUTPUT_FILE = "output.log"
FIXED_COLUMNS = ["scale", "artifact", "run_id", "status", "reason", "error", "run_dir"]


def run_directory(run: PlannedRun, root: Path = RUN_STORE) -> Path:
    return root / run.scale / run.artifact / run.run_id


def claim_run(run_dir: Path, stale_after_seconds: float = DEFAULT_STALE_AFTER_SECONDS) -> Claim | None:
    """Claim a run that has no result.json yet (see experiments.claims)."""
    return try_claim(run_dir, run_dir / RESULT_FILE, stale_after_seconds)


def write_run_inputs(run_dir: Path, run: PlannedRun) -> None:
    """config.yaml and cell.json, written before the run function starts."""
    write_text_atomic(run_dir / CONFIG_FILE, config_yaml(run.config))
    cell = {"artifact": run.artifact, "scale": run.scale, "run_id": run.run_id, "cell": run.cell, "overrides": run.overrides}
    write_json(run_dir / CELL_FILE, cell)


def write_result(run_dir: Path, run: PlannedRun, metrics: dict[str, float], started: datetime) -> None:
    """result.json (atomically), then drop the error.json of an earlier failed attempt."""
    result = run_record(run, started) | {"metrics": {name: float(value) for name, value in metrics.items()}}
    write_json(run_dir / RESULT_FILE, result)
    (run_dir / ERROR_FILE).unlink(missing_ok=True)


def write_error(run_dir: Path, run: PlannedRun, error: BaseException, started: datetime) -> Path:
    """error.json with the exception and its traceback; returns its path for the sweep's summary."""
    failure = run_record(run, started) | {
        "exception_type": type(error).__name__,
        "message": str(error),
        "traceback": "".join(traceback.format_exception(error)),
    }
    write_json(run_dir / ERROR_FILE, failure)
    return run_dir / ERROR_FILE


def run_record(run: PlannedRun, started: datetime) -> dict:
    finished = datetime.now(timezone.utc)
    return {
        "run_id": run.run_id,
        "artifact": run.artifact,
        "scale": run.scale,
        "cell": run.cell,
        "started": started.isoformat(),
        "finished": finished.isoformat(),
        "duration_seconds": (finished - started).total_seconds(),
        "hostname": socket.gethostname(),
    }


def write_json(path: Path, content: dict) -> None:
    write_text_atomic(path, json.dumps(content, indent=2, default=str) + "\n")


def read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None


def read_result(root: Path, scale: str, artifact: str, run_id: str) -> dict | None:
    """The result.json of a run, or None while it is not done."""
    return read_json(root / scale / artifact / run_id / RESULT_FILE)


def run_status(run_dir: Path, stale_after_seconds: float = DEFAULT_STALE_AFTER_SECONDS) -> str:
    """done (result.json), running (a live claim), failed (error.json) or missing."""
    if (run_dir / RESULT_FILE).exists():
        return "done"
    claim = read_claim(run_dir / CLAIM_FILE)
    if claim is not None and not claim.is_stale(stale_after_seconds):
        return "running"
    if (run_dir / ERROR_FILE).exists():
        return "failed"
    return "missing"


def runs_frame(
    runs: Sequence[PlannedRun], root: Path = RUN_STORE, stale_after_seconds: float = DEFAULT_STALE_AFTER_SECONDS
) -> "pd.DataFrame":
    """One row per planned run: its cell, status (done/failed/running/missing/unavailable) and metrics."""
    rows = []
    for run in runs:
        if run.unavailable is not None:
            rows.append(run_row(run.scale, run.artifact, None, run.cell, "unavailable", None) | {"reason": run.unavailable})
        else:
            run_dir = run_directory(run, root)
            rows.append(run_row(run.scale, run.artifact, run.run_id, run.cell, run_status(run_dir, stale_after_seconds), run_dir))
    return frame(rows)


def store_frame(
    root: Path = RUN_STORE,
    scale: str | None = None,
    artifact: str | None = None,
    stale_after_seconds: float = DEFAULT_STALE_AFTER_SECONDS,
) -> "pd.DataFrame":
    """One row per run directory in the store (optionally of one scale and artifact)."""
    rows = []
    for cell_path in sorted(root.glob(f"{scale or '*'}/{artifact or '*'}/*/{CELL_FILE}")):
        cell = read_json(cell_path)
        run_dir = cell_path.parent
        status = run_status(run_dir, stale_after_seconds)
        rows.append(run_row(cell["scale"], cell["artifact"], cell["run_id"], cell["cell"], status, run_dir))
    return frame(rows)


def run_row(scale: str, artifact: str, run_id: str | None, cell: dict, status: str, run_dir: Path | None) -> dict:
    row = {"scale": scale, "artifact": artifact, "run_id": run_id, "status": status, "reason": None, "error": None}
    row |= cell
    row["run_dir"] = str(run_dir) if run_dir is not None else None
    if status == "done":
        row |= read_json(run_dir / RESULT_FILE)["metrics"]
    if status == "failed" and (failure := read_json(run_dir / ERROR_FILE)) is not None:
        row["error"] = f"{failure['exception_type']}: {failure['message']}"
    return row


def frame(rows: list[dict]) -> "pd.DataFrame":
    import pandas as pd  # here, not at the top: workers that only write runs start a second sooner

    return pd.DataFrame(rows, columns=None if rows else FIXED_COLUMNS)
