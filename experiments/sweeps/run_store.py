"""The run store: ``results/runs/<scale>/<artifact>/<run_id>/``, and reading it back as a pandas DataFrame.

A run directory holds ``config.yaml`` (resolved config), ``cell.json`` (grid cell and overrides),
``metrics.csv`` (written by the run function), ``output.log`` (the run's stdout and stderr),
``result.json`` only when the run finished (written atomically) or ``error.json`` when it failed,
and ``claim.json`` while a worker trains it.

A damaged file (result.json that does not parse or lacks its fields, holds a non-finite metric it does not explain,
or lies beside a missing config.yaml or cell.json or a metrics.csv of another size than it records; an unreadable
cell.json or error.json) never stops a reader: it is renamed to ``<name>.damaged-<time>-<tag>`` (never deleted), one
warning line on stderr names it, and its run counts as damaged (not done) until the next sweep reruns it. A file
where a run directory should be is named the same way and its run counted as damaged; the sweep reports that run as
failed and goes on.

Readers open only a run's small files (result.json, cell.json, error.json, claim.json): metrics.csv grows with the
run's length, so result.json records its size, and a reader compares that with the file's (one stat), however long
the run was.
"""

import json
import math
import os
import socket
import sys
import traceback
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from experiments.atomic import write_text_atomic
from experiments.config.artifacts import PlannedRun
from experiments.config.configuration import config_yaml
from experiments.paths import RESULTS
from experiments.sweeps.claims import CLAIM_FILE, DEFAULT_STALE_AFTER_SECONDS, Claim, put_back, read_claim, try_claim

if TYPE_CHECKING:
    import pandas as pd

RUN_STORE = RESULTS / "runs"
CONFIG_FILE = "config.yaml"
CELL_FILE = "cell.json"
RESULT_FILE = "result.json"
ERROR_FILE = "error.json"
OUTPUT_FILE = "output.log"
METRICS_FILE = "metrics.csv"  # written by the run function's CSV logger
FIXED_COLUMNS = ["scale", "artifact", "run_id", "status", "reason", "error", "run_dir"]
# result metrics of a run that diverged (experiments.training.divergence): 1, and the step of its non-finite loss
DIVERGED_METRIC, DIVERGED_AT_METRIC = "train/diverged", "train/diverged_at_step"
# metrics whose value 1 explains a result's non-finite metrics: a diverged run, an evaluation of a diverged run's
# weights (its training run's metrics are prefixed trained/), and, by the last part of its name, a run out of memory
# (experiments.evaluation.generation_speed: no throughput to measure)
NON_FINITE_MARKS = (DIVERGED_METRIC, f"trained/{DIVERGED_METRIC}")
OUT_OF_MEMORY_MARK = "out_of_memory"
METRICS_LOG_BYTES = "metrics_log_bytes"  # result.json's record of its metrics.csv's size (null: the run has none)
CELL_FIELDS = ("scale", "artifact", "run_id", "cell")
FAILURE_FIELDS = ("exception_type", "message")
DAMAGED_SUFFIX = ".damaged-"  # <name>.damaged-<time>-<tag>: a damaged file, moved aside
DAMAGED_FILES_WARNED_OF: set[Path] = set()  # one warning per damaged file and process


def run_directory(run: PlannedRun, root: Path = RUN_STORE) -> Path:
    return root / run.scale / run.artifact / run.run_id


def claim_run(run_dir: Path, stale_after_seconds: float = DEFAULT_STALE_AFTER_SECONDS) -> Claim | None:
    """Claim a run that is not done yet, a damaged result.json counting as not done (see experiments.sweeps.claims)."""
    return try_claim(run_dir, lambda: finished_result(run_dir) is not None, stale_after_seconds)


def write_run_inputs(run_dir: Path, run: PlannedRun) -> None:
    """config.yaml and cell.json, written before the run function starts."""
    write_text_atomic(run_dir / CONFIG_FILE, config_yaml(run.config))
    cell = {
        "artifact": run.artifact,
        "scale": run.scale,
        "run_id": run.run_id,
        "cell": run.cell,
        "overrides": run.overrides,
    }
    write_json(run_dir / CELL_FILE, cell)


def write_result(run_dir: Path, run: PlannedRun, metrics: dict[str, float], started: datetime) -> None:
    """result.json (atomically), with the size of the run's metrics.csv, then drop the error.json of an earlier
    failed attempt. ValueError, and nothing written, for a non-finite metric the metrics do not explain (a run
    function's bug: its run fails instead of being done with it)."""
    metrics = {name: float(value) for name, value in metrics.items()}
    if (problem := non_finite_problem(metrics)) is not None:
        raise ValueError(f"{problem}; a run that did not diverge reports finite metrics")
    result = run_record(run, started) | {"metrics": metrics, METRICS_LOG_BYTES: file_size(run_dir / METRICS_FILE)}
    write_json(run_dir / RESULT_FILE, result)
    (run_dir / ERROR_FILE).unlink(missing_ok=True)


def file_size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except (FileNotFoundError, NotADirectoryError):
        return None


def non_finite_problem(metrics: dict[str, float]) -> str | None:
    """Why the metrics' non-finite values make a result unsound: a metric is NaN or infinite while no mark explains
    it (NON_FINITE_MARKS or a ``*/out_of_memory`` metric at 1); None when every value is finite or explained."""
    explained = any(metrics.get(mark) == 1 for mark in NON_FINITE_MARKS) or any(
        name.rsplit("/", 1)[-1] == OUT_OF_MEMORY_MARK and value == 1 for name, value in metrics.items()
    )
    non_finite = [(name, value) for name, value in metrics.items() if not math.isfinite(value)]
    if not non_finite or explained:
        return None
    name, value = non_finite[0]
    return f"metric {name!r} is {value}, not finite, and the run is not marked diverged ({DIVERGED_METRIC} 1)"


def is_diverged(metrics: dict[str, float]) -> bool:
    return metrics.get(DIVERGED_METRIC) == 1


def divergence_note(metrics: dict[str, float]) -> str:
    """What a finished run's metrics say about divergence: "" for a run whose loss stayed finite."""
    if not is_diverged(metrics):
        return ""
    return f"diverged: non-finite training loss at step {int(metrics[DIVERGED_AT_METRIC])}"


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
    finished = datetime.now(UTC)
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


# --- reading run files back; damaged ones are moved aside ------------------------------------------------------


class DamagedFile(ValueError):
    """A run store file that does not hold what it should; raised once the file is moved aside."""


def finished_result(run_dir: Path) -> dict | None:
    """The run's result.json if the run is done: a JSON object whose ``run_id`` is the directory's and whose
    ``metrics`` map names to numbers, beside config.yaml and a sound cell.json. None while the run is not done; a
    damaged result.json is moved aside with a warning (see the module docstring), so the next sweep reruns it."""
    try:
        return read_checked_json(run_dir / RESULT_FILE, check_result)
    except DamagedFile:
        return None


def read_cell(run_dir: Path) -> dict | None:
    """The run's cell.json (scale, artifact, run_id, cell); None if it is missing or damaged (then moved aside)."""
    try:
        return read_checked_json(run_dir / CELL_FILE, check_cell)
    except DamagedFile:
        return None


def failure_message(run_dir: Path) -> str | None:
    """``<exception type>: <message>`` of the run's error.json; None without one. A damaged error.json is moved
    aside and its run still counts as failed here, with an "unreadable error.json" message."""
    try:
        failure = read_checked_json(run_dir / ERROR_FILE, check_failure)
    except DamagedFile as damage:
        return f"unreadable error.json ({damage})"
    return f"{failure['exception_type']}: {failure['message']}" if failure is not None else None


def read_checked_json(path: Path, check: Callable[[dict, Path], None]) -> dict | None:
    """The JSON object in ``path`` if ``check(content, run_dir)`` accepts it; None if there is no such file.
    Raises DamagedFile, with what is wrong, once a damaged file is moved aside."""
    try:
        data = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):  # no such file, or its run "directory" is a file
        return None
    try:
        content = json_object(data)
        check(content, path.parent)
    except DamagedFile as damage:
        move_aside(path, data, str(damage))
        raise
    return content


def json_object(data: bytes) -> dict:
    if not data.strip():
        raise DamagedFile("empty file")
    try:
        content = json.loads(data)
    except ValueError as error:  # invalid JSON or bytes that are no text (UnicodeDecodeError)
        raise DamagedFile(str(error)) from error
    if not isinstance(content, dict):
        raise DamagedFile(f"a JSON {type(content).__name__}, not an object")
    return content


def check_result(result: dict, run_dir: Path) -> None:
    check_run_id(result, run_dir)
    metrics = result.get("metrics")
    if not isinstance(metrics, dict):
        raise DamagedFile(f"metrics is {metrics!r}, not a mapping of names to numbers")
    for name, value in metrics.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise DamagedFile(f"metric {name!r} is {value!r}, not a number")
    if (problem := non_finite_problem(metrics)) is not None:
        raise DamagedFile(problem)
    if not (run_dir / CONFIG_FILE).exists():
        raise DamagedFile(f"{CONFIG_FILE} is missing")
    if read_cell(run_dir) is None:
        raise DamagedFile(f"{CELL_FILE} is missing or damaged")
    recorded = result.get(METRICS_LOG_BYTES)  # absent from results written before it was recorded: not checked
    if isinstance(recorded, int) and (size := file_size(run_dir / METRICS_FILE)) != recorded:
        found = "is missing" if size is None else f"has {size} bytes"
        raise DamagedFile(
            f"its {METRICS_FILE} {found}, result.json recorded {recorded}: it changed after the run finished"
        )


def check_cell(cell: dict, run_dir: Path) -> None:
    check_fields(cell, CELL_FIELDS)
    check_run_id(cell, run_dir)
    if not isinstance(cell["cell"], dict):
        raise DamagedFile(f"cell is {cell['cell']!r}, not a mapping")


def check_failure(failure: dict, run_dir: Path) -> None:
    check_fields(failure, FAILURE_FIELDS)


def check_fields(content: dict, fields: Sequence[str]) -> None:
    missing = [name for name in fields if name not in content]
    if missing:
        raise DamagedFile(f"no {', '.join(missing)} (expected the fields {', '.join(fields)})")


def check_run_id(content: dict, run_dir: Path) -> None:
    if content.get("run_id") != run_dir.name:
        raise DamagedFile(f"run_id is {content.get('run_id')!r}, expected the directory's {run_dir.name!r}")


def move_aside(path: Path, data: bytes, problem: str) -> None:
    """Rename the damaged file (``data`` is what was read of it) to a unique ``<name>.damaged-<time>-<tag>`` and
    warn. Of processes finding the same damaged file one renames it and warns; to the others it is gone."""
    moved = path.with_name(f"{path.name}{DAMAGED_SUFFIX}{datetime.now(UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}")
    try:
        os.rename(path, moved)
    except FileNotFoundError:
        return
    except OSError as error:
        warn_once(path, f"{path} is damaged ({problem}); could not move it aside ({error}); treated as not done")
        return
    if moved.read_bytes() != data:  # a sound file replaced the damaged one after it was read
        put_back(moved, path)
        return
    warn_once(path, f"{path} is damaged ({problem}); moved to {moved.name} and treated as not done")


def warn_once(path: Path, message: str) -> None:
    if path not in DAMAGED_FILES_WARNED_OF:
        DAMAGED_FILES_WARNED_OF.add(path)
        print(f"warning: {message}", file=sys.stderr, flush=True)


def read_result(root: Path, scale: str, artifact: str, run_id: str) -> dict | None:
    """The result.json of a run, or None while it is not done (see finished_result)."""
    return finished_result(root / scale / artifact / run_id)


# --- the store as frames ------------------------------------------------------------------------------------------


def run_status(run_dir: Path, stale_after_seconds: float = DEFAULT_STALE_AFTER_SECONDS) -> str:
    """done (a sound result.json), running (a live claim), failed (error.json), damaged (not done, and a file of the
    run was moved aside as damaged, or a file stands where its directory should be; see damaged_files) or missing."""
    if finished_result(run_dir) is not None:
        return "done"
    claim = read_claim(run_dir / CLAIM_FILE)
    if claim is not None and not claim.is_stale(stale_after_seconds):
        return "running"
    if (run_dir / ERROR_FILE).exists():
        return "failed"
    return "damaged" if damaged_files(run_dir) else "missing"


def damaged_files(run_dir: Path) -> list[Path]:
    """A file where the run directory should be, or the run's files moved aside as damaged (oldest first)."""
    if run_dir.exists() and not run_dir.is_dir():
        warn_once(
            run_dir,
            f"{run_dir} is a file where a run directory should be; its run cannot be written until "
            "the file is moved away",
        )
        return [run_dir]
    return sorted(run_dir.glob(f"*{DAMAGED_SUFFIX}*"))


def runs_frame(
    runs: Sequence[PlannedRun], root: Path = RUN_STORE, stale_after_seconds: float = DEFAULT_STALE_AFTER_SECONDS
) -> "pd.DataFrame":
    """One row per planned run: its cell, status (done/failed/running/missing/unavailable) and metrics."""
    rows = []
    for run in runs:
        if run.unavailable is not None:
            rows.append(
                run_row(run.scale, run.artifact, None, run.cell, "unavailable", None) | {"reason": run.unavailable}
            )
        else:
            run_dir = run_directory(run, root)
            rows.append(
                run_row(
                    run.scale, run.artifact, run.run_id, run.cell, run_status(run_dir, stale_after_seconds), run_dir
                )
            )
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
        run_dir = cell_path.parent
        cell = read_cell(run_dir)
        if cell is not None:  # a damaged cell.json was moved aside: its run is rerun
            status = run_status(run_dir, stale_after_seconds)
            rows.append(run_row(cell["scale"], cell["artifact"], cell["run_id"], cell["cell"], status, run_dir))
    return frame(rows)


def run_row(scale: str, artifact: str, run_id: str | None, cell: dict, status: str, run_dir: Path | None) -> dict:
    row = {"scale": scale, "artifact": artifact, "run_id": run_id, "status": status, "reason": None, "error": None}
    row |= cell
    row["run_dir"] = str(run_dir) if run_dir is not None else None
    if status == "done" and (result := finished_result(run_dir)) is not None:
        row |= result["metrics"]
    if status == "failed":
        row["error"] = failure_message(run_dir)
    if status == "damaged":
        row["error"] = "damaged: " + ", ".join(str(path) for path in damaged_files(run_dir))
    return row


def frame(rows: list[dict]) -> "pd.DataFrame":
    import pandas as pd  # here, not at the top: workers that only write runs start a second sooner

    return pd.DataFrame(rows, columns=None if rows else FIXED_COLUMNS)
