"""A table report's detail table (experiments.reports.detail_table): one row per metric of the prefix, one column per
cell (the mean over its finished runs), and the page's counts of the names in which one model beats another at the
same size, checked against counts by hand; the layout refuses a detail without a prefix or comparing a non-cell."""

import pandas as pd
import pytest

from experiments.config.report_layouts import report_layout
from experiments.reports.detail_table import detail_frame, wins_markdown

PREFIX = "paloma/domain/"


def layout(**detail):
    return report_layout(
        {
            "kind": "table",
            "cells": ["model", "model.size"],
            "metric": "paloma/average",
            "detail": {"prefix": PREFIX, **detail},
        }
    )


def runs() -> pd.DataFrame:
    """Two seeds of xLSTM[1:0] and one of Llama at 125m, three domains; a failed run that must not count."""
    return pd.DataFrame(
        [
            {
                "model": "xlstm_1_0",
                "model.size": "125m",
                "status": "done",
                f"{PREFIX}c4/a": 10.0,
                f"{PREFIX}c4/b": 30.0,
                f"{PREFIX}wiki/c": 5.0,
                "paloma/average": 1.0,
            },
            {
                "model": "xlstm_1_0",
                "model.size": "125m",
                "status": "done",
                f"{PREFIX}c4/a": 14.0,
                f"{PREFIX}c4/b": 30.0,
                f"{PREFIX}wiki/c": 7.0,
                "paloma/average": 1.0,
            },
            {
                "model": "llama",
                "model.size": "125m",
                "status": "done",
                f"{PREFIX}c4/a": 13.0,
                f"{PREFIX}c4/b": 29.0,
                f"{PREFIX}wiki/c": 8.0,
                "paloma/average": 1.0,
            },
            {
                "model": "llama",
                "model.size": "125m",
                "status": "failed",
                f"{PREFIX}c4/a": 1.0,
                f"{PREFIX}c4/b": 1.0,
                f"{PREFIX}wiki/c": 1.0,
                "paloma/average": 1.0,
            },
        ]
    )


def test_the_detail_holds_each_cells_mean_per_name():
    detail = detail_frame(layout(), runs())
    assert list(detail.index) == ["c4/a", "c4/b", "wiki/c"]
    assert detail["xLSTM[1:0] size=125m"].tolist() == [12.0, 30.0, 6.0]  # the two seeds' means
    assert detail["Llama size=125m"].tolist() == [13.0, 29.0, 8.0]  # the failed run left out


def test_the_wins_count_the_names_where_one_model_is_lower():
    page = wins_markdown(layout(), runs(), mode="min")
    rows = [line for line in page.splitlines() if "125m" in line]
    assert any("xLSTM[1:0]" in row.split("|")[2] and "2 of 3" in row for row in rows)  # c4/a 12<13, wiki/c 6<8
    assert any("Llama" in row.split("|")[2] and "1 of 3" in row for row in rows)  # c4/b 29<30


@pytest.mark.parametrize("detail", [{"compare": "model.size"}, {}])
def test_a_sound_detail_section_loads(detail):
    assert layout(**detail).detail["prefix"] == PREFIX


@pytest.mark.parametrize(
    "report",
    [
        {"detail": {"compare": "model"}},
        {"detail": {"prefix": PREFIX, "compare": "task"}},
        {"detail": {"prefix": PREFIX, "colour": "red"}},
    ],
)
def test_a_bad_detail_section_is_named(report):
    with pytest.raises(ValueError, match="detail=.* must map prefix"):
        report_layout({"kind": "table", "cells": ["model", "model.size"], "metric": "paloma/average", **report})
