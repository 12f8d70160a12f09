"""Per-run results committed beside a report: ``results/reports/<scale>/<report>.runs.csv``.

The run store (results/runs) is not committed, so a report could not be regenerated from a clone. Each report
therefore writes, beside itself, one row per run behind it, readable alone: every cell key (an evaluation's include
its model, seed and size), the model's size (its preset, blocks and embedding dimension, from the run's config; its
parameter count is among the metrics), the run id, its status, its error if it failed and its final metrics.
``report`` reads the run store and, for planned runs the store has not finished, these committed rows (matched by run
id, so a row never stands in for a run of another config): those beside the report it writes and those the
repository commits (experiments.reports.repository), whatever folder it writes to.
"""

from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from omegaconf import OmegaConf

from experiments.atomic import write_text_atomic
from experiments.config.artifacts import PlannedRun
from experiments.sweeps.per_run_results import read_per_run_results
from experiments.sweeps.run_store import FIXED_COLUMNS

SUFFIX = ".runs.csv"
COMMITTED_STATUSES = ("done", "failed")
SOURCE = "source"  # which results a row's metrics come from: "store", "committed" or empty
METRIC_SEPARATOR = "/"  # logged metrics are named <stage>/<name>; config keys use dots
SIZE_KEYS = ("model.size", "model.num_blocks", "model.embedding_dim")  # a model's size in its config


def committed_path(stem: Path) -> Path:
    return stem.with_name(stem.name + SUFFIX)


def metric_columns(runs: pd.DataFrame, cell_keys: list[str]) -> list[str]:
    """The metrics among ``runs``' columns: logged names (``val/loss``, ``train/steps``); a column of a cell key the
    artifact no longer has (a committed file written before its grid changed) is neither a metric nor a cell."""
    bookkeeping = {*FIXED_COLUMNS, *cell_keys, "unavailable", SOURCE}
    return sorted(column for column in runs.columns if column not in bookkeeping and METRIC_SEPARATOR in column)


def with_sizes(runs: pd.DataFrame, planned: Sequence[PlannedRun], cell_keys: list[str]) -> pd.DataFrame:
    """``runs`` with a column per key of SIZE_KEYS that is not a cell key: its value in the config that trained each
    run (an evaluation's training run's), empty where the config has none (no preset) or the run is not planned."""
    trained = {run.run_id: (run.trained_by or run).config or run.config for run in planned if run.run_id is not None}
    runs = runs.copy()
    for key in SIZE_KEYS:
        if key not in cell_keys:
            runs[key] = [
                None if run_id not in trained or trained[run_id] is None else OmegaConf.select(trained[run_id], key)
                for run_id in runs["run_id"]
            ]
    return runs


def per_run_rows(runs: pd.DataFrame, cell_keys: list[str]) -> pd.DataFrame:
    """The rows to commit: finished and failed runs, in plan order; the cell keys, the size keys ``runs`` has
    (with_sizes), the run's id, status and error, and its metrics."""
    kept = runs[runs["status"].isin(COMMITTED_STATUSES)]
    sizes = [key for key in SIZE_KEYS if key in runs and key not in cell_keys]
    return kept[[*cell_keys, *sizes, "run_id", "status", "error", *metric_columns(runs, cell_keys)]]


def write_committed(path: Path, rows: pd.DataFrame) -> None:
    write_text_atomic(path, rows.to_csv(index=False))


def committed_rows(*paths: Path) -> pd.DataFrame | None:
    """The committed rows of the files at ``paths`` that exist, a run id in an earlier file winning over a later
    one (the rows beside the report written, then the repository's)."""
    frames = [frame for frame in (read_per_run_results(path) for path in dict.fromkeys(paths)) if frame is not None]
    if not frames:
        return None
    return pd.concat(frames, ignore_index=True).drop_duplicates("run_id", keep="first").reset_index(drop=True)


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
