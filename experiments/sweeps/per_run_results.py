"""Reading a report's committed per-run results (``<report>.runs.csv``, written by experiments.reports.
committed_runs), for the report that regenerates from them and for ``list``, which counts their runs as done."""

from pathlib import Path

import pandas as pd

REQUIRED_COLUMNS = ("run_id", "status")
TEXT_COLUMNS = {"run_id": str, "status": str, "error": str}  # a run id of 12 digits stays text, its zeros kept


def read_per_run_results(path: Path) -> pd.DataFrame | None:
    """The committed rows, floats exactly as written (pandas >= 3 parses floats round-trip exact); None without the
    file. A file that is not one (empty, not CSV, without a run id and status per row) is a ValueError naming it."""
    if not path.exists():
        return None
    restore = f"`git checkout -- {path}` restores a committed one"
    try:
        rows = pd.read_csv(path, dtype=TEXT_COLUMNS)
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as error:
        raise ValueError(f"{path} is not a report's per-run results ({error}); {restore}") from error
    missing = [column for column in REQUIRED_COLUMNS if column not in rows.columns]
    if missing:
        raise ValueError(f"{path} is not a report's per-run results: it has no column {missing}; {restore}")
    return rows
