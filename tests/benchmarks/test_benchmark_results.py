"""A benchmark run of some sections (--only) replaces only their rows of the results file."""

import io

import pandas as pd
import pytest

from benchmarks.run import with_other_sections

COLUMNS = ["section", "benchmark", "shape", "unit", "ours", "peer_name", "peer", "target", "ratio", "met"]


def rows(section: str, benchmark: str, ours: float, target=None) -> dict:
    return dict(
        zip(
            COLUMNS,
            [section, benchmark, "S=256", "ms", ours, "peer", 2.0, target, 2.0 / ours, "" if target is None else "yes"],
        )
    )


def test_a_run_of_one_section_keeps_the_others_and_replaces_its_own(tmp_path):
    destination = tmp_path / "benchmarks.csv"
    earlier = pd.DataFrame(
        [
            rows("mlstm", "old chunkwise", 1.5),
            rows("mlstm", "dropped row", 1.0),
            rows("training", "training step", 3.0, target=1.3),
            rows("generation", "step", 0.5),
        ]
    )
    destination.write_text(earlier.to_csv(index=False))
    fresh = pd.DataFrame([rows("mlstm", "new chunkwise", 1.25)])

    merged = with_other_sections(fresh, destination)

    assert merged["benchmark"].tolist() == ["new chunkwise", "training step", "step"]
    written = pd.read_csv(io.StringIO(merged.to_csv(index=False)), dtype=str, keep_default_na=False)
    assert written.loc[1, "target"] == "1.3" and written.loc[0, "target"] == ""  # no target stays empty, not 'nan'
    assert written.loc[0, "ours"] == "1.25"


def test_without_a_file_the_run_is_the_whole_table(tmp_path):
    fresh = pd.DataFrame([rows("slstm", "scan", 1.0)])
    assert with_other_sections(fresh, tmp_path / "absent.csv") is fresh


def test_a_file_without_sections_is_refused_rather_than_overwritten(tmp_path):
    destination = tmp_path / "benchmarks.csv"
    destination.write_text("benchmark,ours\nold,1.0\n")
    with pytest.raises(SystemExit, match="no section column"):
        with_other_sections(pd.DataFrame([rows("mlstm", "new", 1.0)]), destination)
    assert destination.read_text() == "benchmark,ours\nold,1.0\n"
