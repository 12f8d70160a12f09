"""Per-run results committed beside a report: ``results/reports/<scale>/<report>.runs.csv``.

The run store (results/runs) is not committed, so a report could not be regenerated from a clone. Each report
therefore writes, beside itself, one row per run behind it: the cell keys, the run id, its status, its error if it
failed and its final metrics. ``report`` reads the run store and, for planned runs the store has not finished,
these committed rows (matched by run id, so a row never stands in for a run of another config).
"""

from pathlib import Path

import pandas as pd

from experiments.atomic import write_text_atomic
from experiments.sweeps.run_store import FIXED_COLUMNS

SUFFIX = ".runs.csv"
COMMITTED_STATUSES = ("done", "failed")
SOURCE = "source"  # which results a row's metrics come from: "store", "committed" or empty
METRIC_SEPARATOR = "/"  # logged metrics are named <stage>/<name>; config keys use dots


def committed_path(stem: Path) -> Path:
    return stem.with_name(stem.name + SUFFIX)


def metric_columns(runs: pd.DataFrame, cell_keys: list[str]) -> list[str]:
    """The metrics among ``runs``' columns: logged names (``val/loss``, ``train/steps``); a column of a cell key the
    artifact no longer has (a committed file written before its grid changed) is neither a metric nor a cell."""
    bookkeeping = {*FIXED_COLUMNS, *cell_keys, "unavailable", SOURCE}
    return sorted(column for column in runs.columns if column not in bookkeeping and METRIC_SEPARATOR in column)


def per_run_rows(runs: pd.DataFrame, cell_keys: list[str]) -> pd.DataFrame:
    """The rows to commit: finished and failed runs, in plan order."""
    kept = runs[runs["status"].isin(COMMITTED_STATUSES)]
    return kept[[*cell_keys, "run_id", "status", "error", *metric_columns(runs, cell_keys)]]


def write_committed(path: Path, rows: pd.DataFrame) -> None:
    write_text_atomic(path, rows.to_csv(index=False))


def read_committed(path: Path) -> pd.DataFrame | None:
    """The committed rows, floats exactly as written (pandas >= 3 parses floats round-trip exact)."""
    if not path.exists():
        return None
    return pd.read_csv(path)


def with_committed(runs: pd.DataFrame, committed: pd.DataFrame | None, cell_keys: list[str]) -> pd.DataFrame:
    """The planned runs with committed results filled in where the store has none.

    A committed finished run replaces a store row that is not done (missing, failed, running); a committed failure
    fills in only a run the store knows nothing of. ``source`` says where each finished or failed row comes from.
    """
    runs = runs.copy()
    runs[SOURCE] = runs["status"].map({"done": "store", "failed": "store"}).fillna("")
    if committed is None or committed.empty:
        return runs
    metrics = metric_columns(committed, cell_keys)
    for column in metrics:
        if column not in runs.columns:
            runs[column] = float("nan")
    by_run_id = committed.drop_duplicates("run_id").set_index("run_id")
    for index, run_id, status in zip(runs.index, runs["run_id"], runs["status"]):
        if status == "done" or run_id not in by_run_id.index:
            continue
        row = by_run_id.loc[run_id]
        if row["status"] == "done" or status == "missing":
            runs.loc[index, metrics] = row[metrics].to_numpy(dtype=float)
            runs.loc[index, ["status", "error", SOURCE]] = [row["status"], row["error"], "committed"]
    return runs
