"""A report made with overrides records them beside itself, and `report all` finds them there to regenerate it."""

import argparse
import json

import pytest

from experiments.reports.report import write_report
from experiments.reports.report_variants import committed_variants
from tests.experiments.reports.test_reports import FIXTURE, NO_TORCH, sweep


def test_a_report_with_overrides_records_them_and_the_artifacts_own_report_does_not(tmp_path):
    sweep(tmp_path / "runs")
    outcome = write_report(FIXTURE, "smoke", tmp_path / "runs", tmp_path / "reports", extra_overrides=NO_TORCH)
    [record] = [path for path in outcome.paths if path.name.endswith(".overrides.json")]
    assert json.loads(record.read_text()) == {"overrides": NO_TORCH, "where": []}
    assert committed_variants(tmp_path / "reports", "smoke", FIXTURE) == [(NO_TORCH, [])]
    assert committed_variants(tmp_path / "reports", "smoke", "sweep") == []  # another artifact's name prefix
    assert committed_variants(tmp_path / "reports", "mini", FIXTURE) == []
    record.write_text("{not json")
    with pytest.raises(ValueError, match="is not a report's overrides"):
        committed_variants(tmp_path / "reports", "smoke", FIXTURE)


def test_report_all_regenerates_a_committed_variant_without_a_skip_line_for_the_plain_form(
    tmp_path, monkeypatch, capsys
):
    """temp_sclaw300B's committed mini report was made with task=offline_docs: `report all` rewrites it from its
    committed rows and says nothing of the plain form, which has no runs."""
    from experiments.reports import report

    monkeypatch.setattr(report, "named_artifacts", lambda name, scale: ["temp_sclaw300B"])
    monkeypatch.setattr(report, "known_artifacts", lambda: ["temp_sclaw300B"])
    arguments = argparse.Namespace(artifact="all", scale="mini", root=str(tmp_path / "runs"), overrides=[],
                                   destination=str(tmp_path / "reports"), force=False, where=[])  # fmt: skip
    assert report.report_command(arguments) == 0
    output = capsys.readouterr().out
    assert "temp_sclaw300B-a2c0987b.md" in output and "skipped" not in output
    assert (tmp_path / "reports" / "mini" / "temp_sclaw300B-a2c0987b.runs.csv").exists()
