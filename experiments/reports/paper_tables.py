"""The paper's numeric tables, transcribed one CSV per LaTeX label into results/paper/tables/, read as DataFrames.

Each table is wide so that our numbers can stand beside the paper's: one row per printed row (model, and size where
the paper trains several), one column per printed column. ``model`` and ``size`` are our registry's names (``size``
only where the table has sizes); ``paper_name`` is the name as printed. Cells keep the printed precision. An empty
cell is one the paper leaves empty, marks "-" or, in ``lra_test_accuracy``, marks "X" (a model that does not beat the
random baseline); ``NaN`` is a NaN the paper prints (``ablstudies``). A row without ``model`` names no single model of
ours: the random baseline, and ``lra_test_accuracy``'s "xLSTM", the better of xLSTM[1:0] and xLSTM[0:1] on validation.

The tables live in a folder of their own because results/paper/<artifact>.csv is the long format (``metric`` and
``paper`` columns per cell) that the artifact reports read, and the artifacts carry these same labels.
"""

import pandas as pd

from experiments.paths import PAPER_NUMBERS

PAPER_TABLES = PAPER_NUMBERS / "tables"


def available_paper_tables() -> list[str]:
    return sorted(path.stem for path in PAPER_TABLES.glob("*.csv"))


def paper_table(label: str) -> pd.DataFrame:
    """The table with LaTeX label ``label`` (without its ``tab:`` or ``fig:`` prefix), e.g. ``paper_table("lmeval")``."""
    available = available_paper_tables()
    if label not in available:
        raise ValueError(f"unknown paper table {label!r}; available: {available}")
    return pd.read_csv(PAPER_TABLES / f"{label}.csv", dtype={"size": str})
