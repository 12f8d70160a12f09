"""The words of a report: its title with the scale's settings filled in, and its markdown page."""

from collections.abc import Sequence

import pandas as pd

from experiments.config.artifacts import Artifact, PlannedRun
from experiments.config.report_layouts import ScalingReport, TableReport
from experiments.config.titles import config_values, summary, title_of
from experiments.display import SCALE_NOTES, model_name, task_name, value_name
from experiments.reports.finding_checks import CheckContext, check, checked_markdown
from experiments.reports.findings import Finding
from experiments.reports.page_summary import summary_markdown
from experiments.reports.paper_columns import paired_names, paper_columns_of
from experiments.reports.paper_numbers import PAPER_ROW
from experiments.reports.power_laws import power_laws_markdown, scaling_lines
from experiments.reports.rankings import (
    cell_names,
    order_groups,
    ordering,
    ordering_markdown,
)
from experiments.reports.scale_reading import reading_of
from experiments.reports.scale_statements import scale_statements
from experiments.reports.statements import digits_for
from experiments.reports.wide_table import (
    merged_choices_markdown,
    printed_ranking,
    rules_markdown,
    wide_markdown,
)

UNPRINTED_MARK = "no number¹"


PER_MODEL_SETTINGS = ("seed",)  # said per model by the page's "What we measured", not over every run


def settings_line(artifact: Artifact, runs: Sequence[PlannedRun]) -> str:
    """``report.settings`` (config keys) with their values at this scale: "num_blocks 2, embedding_dim 64, ..."; the
    seeds are not among them (models may run different seeds: the page says which)."""
    return ", ".join(
        f"{key.rsplit('.', 1)[-1]} {summary(config_values(runs, key))}"
        for key in artifact.report.get("settings", [])
        if key not in PER_MODEL_SETTINGS
    )


def figure_title(artifact: Artifact, runs: Sequence[PlannedRun], scale: str) -> str:
    lines = [f"{title_of(artifact, runs)} [{scale} scale]", settings_line(artifact, runs)]
    if scale == "smoke":
        lines.append("smoke: tests code paths, not findings")
    return "\n".join(line for line in lines if line)


def cell_keys_shown(artifact: Artifact, table: pd.DataFrame) -> pd.DataFrame:
    """The cell keys of the cell table as a page shows them: models and tasks by the paper's names."""
    shown = pd.DataFrame(
        {
            key: table[key]
            if table[key].notna().all()
            # a key some cells lack: blank there
            else table[key].map(lambda value: "" if pd.isna(value) else str(value))
            for key in artifact.report["cells"]
        }
    )
    if "model" in shown:
        shown["model"] = shown["model"].map(model_name)
    if "task" in shown:
        shown["task"] = shown["task"].map(task_name)
    if PAPER_ROW in table:
        shown[PAPER_ROW] = table[PAPER_ROW]
    return shown


OURS_HEADER = "ours (mean ± sample std)"


def spread_digits(table: pd.DataFrame) -> int:
    """Decimals that show each cell's sample std and the differences between the means (three at least)."""
    spreads = [std for std, runs in zip(table["std"], table["runs"]) if runs > 1 and not pd.isna(std) and std > 0]
    return max([digits_for(table["ours"]), *(digits_for([0.0, std]) for std in spreads)], default=3)


def cells_markdown(artifact: Artifact, table: pd.DataFrame) -> str:
    """The cell table with the paper's names; the paper column says when the paper prints no number."""
    shown = cell_keys_shown(artifact, table)
    digits = spread_digits(table)
    shown[OURS_HEADER if (table["runs"] > 1).any() else "ours"] = [
        "" if pd.isna(ours) else (f"{ours:.{digits}f} ± {std:.{digits}f}" if runs > 1 else f"{ours:.{digits}f}")
        for ours, std, runs in zip(table["ours"], table["std"], table["runs"])
    ]
    for metric in artifact.layout.page_metrics():
        shown[metric] = ["" if pd.isna(value) else f"{value:.4g}" for value in table[metric]]
    unprinted = artifact.paper.get("unprinted")
    shown["paper"] = [
        UNPRINTED_MARK if unprinted else ("" if pd.isna(value) else f"{value:.3f}") for value in table["paper"]
    ]
    if table["paper"].notna().any():
        shown["ours - paper"] = [
            "" if pd.isna(ours) or pd.isna(paper) else f"{ours - paper:+.3f}"
            for ours, paper in zip(table["ours"], table["paper"])
        ]
    shown["runs"] = table["runs"]
    if (table["runs"] > 1).any():
        shown["range"] = [
            f"{low:.{digits}f} to {high:.{digits}f}" if runs > 1 else ""
            for low, high, runs in zip(table["min"], table["max"], table["runs"])
        ]
    if (solved_at := artifact.report.get("solved_at")) is not None:
        shown[f"solved (>= {solved_at:g})"] = [
            f"{solved} of {runs}" if runs else "" for solved, runs in zip(table["solved"], table["runs"])
        ]
    shown["note"] = table["note"]
    lines = [shown.to_markdown(index=False)]
    if unprinted:
        lines += ["", f"¹ {unprinted}"]
    return "\n".join(lines)


def paper_columns_markdown(artifact: Artifact, table: pd.DataFrame) -> str:
    """Each cell's value of each paper column (``report.paper_columns``), ours beside the paper's."""
    columns = paper_columns_of(artifact.layout)
    shown = cell_keys_shown(artifact, table)
    for name in paired_names(artifact.layout):
        shown[name] = ["" if pd.isna(value) else f"{value:.3f}" for value in table[name]]
    said = ", ".join(f"{column} is {metric}" for column, metric in columns.items())
    return "\n".join(
        [
            f"Per cell, ours is the mean over the chosen runs (those of `ours` below) of the metric each of "
            f"the paper's columns is compared with: {said}.",
            "",
            shown.to_markdown(index=False),
        ]
    )


def check_context(artifact: Artifact, table: pd.DataFrame) -> CheckContext:
    layout = artifact.layout
    return CheckContext(
        cells=list(artifact.report["cells"]),
        metric=artifact.report["metric"],
        mode=artifact.selection["mode"],
        x=getattr(layout, "x", None),
        out_of_memory=getattr(layout, "out_of_memory", None),
        names=pd.Series(cell_names(table, artifact.report["cells"]), index=table.index),
        confidence=getattr(layout, "confidence", None),
    )


def selection_line(artifact: Artifact, table: pd.DataFrame) -> str:
    report, selection = artifact.report, artifact.selection
    return (
        f"Selection: per cell, the {', '.join(selection.get('choose', [])) or 'run'} with the best "
        f"{selection['metric']} ({selection['mode']}) averaged over {', '.join(selection.get('average', [])) or 'nothing'}"
        + "".join(
            f"; the row {value_name(key, row)} is the best of {', '.join(value_name(key, m) for m in members)}"
            for key, rows in (selection.get("merge") or {}).items()
            for row, members in rows.items()
        )
        + "; "
        f"`ours` is the mean of {report['metric']} over the chosen runs (`runs` of them), ± their sample standard "
        "deviation (ddof 1)"
        + ("; `range` is their lowest to highest value" if (table["runs"] > 1).any() else "")
        + (
            f"; `solved` counts those with {report['metric']} >= {report['solved_at']:g} (our threshold)"
            if report.get("solved_at") is not None
            else ""
        )
        + "."
    )


def markdown(
    artifact: Artifact,
    runs: Sequence[PlannedRun],
    table: pd.DataFrame,
    scale: str,
    figure_name: str | None,
    extra_overrides: Sequence[str],
    findings: Sequence[Finding],
    run_rows: pd.DataFrame | None = None,
) -> str:
    """The page: the three questions (what the paper found, what we measured, whether it shows), the settings and
    selection, the figure, each finding's check, what this scale shows (computed), the paper's order, the tables.
    ``run_rows``: one row per planned run (status, cell keys, metrics); without it, the cells' runs stand in."""
    report, selection, layout = artifact.report, artifact.selection, artifact.layout
    context = check_context(artifact, table)
    checked = [check(finding, table, context) for finding in findings]
    reading = reading_of(artifact, scale)
    if run_rows is None:
        run_rows = pd.DataFrame(
            {
                **{key: table[key] for key in report["cells"]},
                "run_id": None,
                "status": ["done" if runs else "missing" for runs in table["runs"]],
            }
        )
    lines = [
        f"# {artifact.name} ({scale} scale)",
        "",
        title_of(artifact, runs),
        "",
        f"*{SCALE_NOTES[scale]}*",
        "",
        summary_markdown(
            artifact, runs, run_rows, list(report["cells"]), findings, [one.holds for one in checked], scale, reading
        ),
        "",
    ]
    if report.get("settings"):
        lines += [f"Settings at this scale: {settings_line(artifact, runs)}.", ""]
    if extra_overrides:
        subset = any(argument.startswith("--where ") for argument in extra_overrides)
        what = "Part of the grid, runs of" if subset else "Runs with the overrides"
        lines += [f"{what} `{' '.join(extra_overrides)}`.", ""]
    lines += [selection_line(artifact, table), ""]
    if figure_name:
        lines += [f"![{artifact.name}]({figure_name})", ""]
    if findings:
        lines += ["## The paper's findings and ours", ""]
        for number, (finding, one) in enumerate(zip(findings, checked), start=1):
            lines += [f"### {number}. {finding.source}", "", checked_markdown(finding, one), ""]
    statements = scale_statements(artifact, table, context.names, scale, context)
    if statements or reading.note:
        lines += ["## What this scale shows", "", *(f"{paragraph}\n" for paragraph in statements)]
        lines += [reading.note.strip(), ""] if reading.note else []
    groups = order_groups(table, report["cells"])
    found = ordering(table, list(context.names), selection["mode"], groups)
    if found is not None:
        lines += [
            "## The paper's order and ours",
            "",
            ordering_markdown(table, list(context.names), found, report["metric"], selection["mode"], groups),
            "",
        ]
    if isinstance(layout, TableReport) and layout.columns:
        lines += [
            "## Table",
            "",
            wide_markdown(layout, table, selection["mode"], printed_ranking(artifact.paper, table, layout)),
            "",
        ]
        notes = " ".join(
            note
            for note in (rules_markdown(layout, selection["mode"]), merged_choices_markdown(table, layout.columns))
            if note
        )
        lines += [notes, ""] if notes else []
    if isinstance(layout, ScalingReport):
        lines += [
            "## Power laws",
            "",
            power_laws_markdown(scaling_lines(table, layout.lines, layout.cells), layout.lines, report["metric"]),
            "",
        ]
    if paper_columns_of(layout):
        lines += ["## The paper's columns and ours", "", paper_columns_markdown(artifact, table), ""]
    lines += ["## Cells", "", cells_markdown(artifact, table)]
    return "\n".join(lines) + "\n"
