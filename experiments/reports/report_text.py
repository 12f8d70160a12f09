"""The words of a report: its title with the scale's settings filled in, and its markdown page."""

from collections.abc import Sequence

import pandas as pd

from experiments.config.artifacts import Artifact, PlannedRun
from experiments.config.report_layouts import ScalingReport, TableReport
from experiments.config.titles import config_values, summary, title_of
from experiments.display import SCALE_NOTES, model_name, task_name, value_name
from experiments.reports.findings import Finding, check, reference_mean
from experiments.reports.paper_columns import paired_names, paper_columns_of
from experiments.reports.paper_numbers import PAPER_ROW
from experiments.reports.power_laws import power_laws_markdown, scaling_lines
from experiments.reports.rankings import cell_names, ordering, ordering_markdown
from experiments.reports.wide_table import merged_choices_markdown, printed_ranking, rules_markdown, wide_markdown

UNPRINTED_MARK = "no number¹"


def settings_line(artifact: Artifact, runs: Sequence[PlannedRun]) -> str:
    """``report.settings`` (config keys) with their values at this scale: "num_blocks 2, embedding_dim 64, ..."."""
    return ", ".join(f"{key.rsplit('.', 1)[-1]} {summary(config_values(runs, key))}"
                     for key in artifact.report.get("settings", []))


def figure_title(artifact: Artifact, runs: Sequence[PlannedRun], scale: str) -> str:
    lines = [f"{title_of(artifact, runs)} [{scale} scale]", settings_line(artifact, runs)]
    if scale == "smoke":
        lines.append("smoke: tests code paths, not findings")
    return "\n".join(line for line in lines if line)


def cell_keys_shown(artifact: Artifact, table: pd.DataFrame) -> pd.DataFrame:
    """The cell keys of the cell table as a page shows them: models and tasks by the paper's names."""
    shown = pd.DataFrame({key: table[key] if table[key].notna().all() else  # a key some cells lack: blank there
                          table[key].map(lambda value: "" if pd.isna(value) else str(value))
                          for key in artifact.report["cells"]})
    if "model" in shown:
        shown["model"] = shown["model"].map(model_name)
    if "task" in shown:
        shown["task"] = shown["task"].map(task_name)
    if PAPER_ROW in table:
        shown[PAPER_ROW] = table[PAPER_ROW]
    return shown


def cells_markdown(artifact: Artifact, table: pd.DataFrame) -> str:
    """The cell table with the paper's names; the paper column says when the paper prints no number."""
    shown = cell_keys_shown(artifact, table)
    shown["ours"] = [
        "" if pd.isna(ours) else (f"{ours:.3f} ± {std:.3f}" if runs > 1 else f"{ours:.3f}")
        for ours, std, runs in zip(table["ours"], table["std"], table["runs"])
    ]
    for metric in artifact.layout.page_metrics():
        shown[metric] = ["" if pd.isna(value) else f"{value:.4g}" for value in table[metric]]
    unprinted = artifact.paper.get("unprinted")
    shown["paper"] = [UNPRINTED_MARK if unprinted else ("" if pd.isna(value) else f"{value:.3f}")
                      for value in table["paper"]]
    if table["paper"].notna().any():
        shown["ours - paper"] = ["" if pd.isna(ours) or pd.isna(paper) else f"{ours - paper:+.3f}"
                                 for ours, paper in zip(table["ours"], table["paper"])]
    shown["runs"] = table["runs"]
    if (table["runs"] > 1).any():
        shown["range"] = [f"{low:.3f} to {high:.3f}" if runs > 1 else ""
                          for low, high, runs in zip(table["min"], table["max"], table["runs"])]
    if (solved_at := artifact.report.get("solved_at")) is not None:
        shown[f"solved (>= {solved_at:g})"] = [f"{solved} of {runs}" if runs else ""
                                               for solved, runs in zip(table["solved"], table["runs"])]
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
    return "\n".join([f"Per cell, ours is the mean over the chosen runs (those of `ours` below) of the metric each of "
                      f"the paper's columns is compared with: {said}.", "", shown.to_markdown(index=False)])


def finding_markdown(finding: Finding, table: pd.DataFrame, metric: str) -> str:
    checked = check(finding, table)
    where = ", ".join(f"{key} {task_name(str(value)) if key == 'task' else value}" for key, value in finding.where.items())
    on = f" on {where}" if where else " on every cell"
    if finding.compares:
        selected = table
        for key, value in finding.where.items():
            selected = selected[selected[key] == value]
        reference = reference_mean(finding, selected)
        mean = "no finished run" if reference is None else f"{reference:.3f}"
        rule = (f"Below means {metric} < the mean of {model_name(finding.than)}'s runs ({mean}){on}, judged run by "
                f"run: a model is below when all its runs are, above when none is, mixed otherwise.")
        counted, side = "runs below", "below"
    else:
        rule = (f"Solved means {metric} >= {finding.threshold:g}{on} (our threshold; the paper states none), judged run "
                "by run: a model is solved when all its runs are, unsolved when none is, mixed otherwise.")
        counted, side = "runs solved", "solved"
    lines = [
        f"> {finding.quote}", ">", f"> -- the paper, {finding.source}", "", rule, "",
        f"| model | paper | ours | {counted} | our values | agrees |", "| --- | --- | --- | --- | --- | --- |",
    ]
    for row in checked.itertuples():
        values = ", ".join(f"{value:.3f}" for value in row.values)
        solved = f"{row.solved_runs} of {len(row.values)}" if row.values and not pd.isna(row.agrees) else ""
        agrees = "-" if pd.isna(row.agrees) else ("**no**" if row.agrees == "no" else row.agrees)
        lines.append(f"| {model_name(row.model)} | {row.paper} | {row.ours} | {solved} | {values} | {agrees} |")
    judged = checked[checked["agrees"].notna()]
    if len(judged):
        names = {verdict: [model_name(model) for model in judged.loc[judged["agrees"] == verdict, "model"]]
                 for verdict in ("yes", "partly", "no")}
        lines += ["", f"Ours agrees for {len(names['yes'])} of the {len(judged)} models with results at this scale"
                  + (f"; partly ({side} in some runs, not all) for {', '.join(names['partly'])}" if names["partly"] else "")
                  + (f"; it differs for {', '.join(names['no'])}" if names["no"] else "") + "."]
    return "\n".join(lines)


def markdown(artifact: Artifact, runs: Sequence[PlannedRun], table: pd.DataFrame, scale: str,
             figure_name: str | None, extra_overrides: Sequence[str], findings: Sequence[Finding]) -> str:
    report, selection = artifact.report, artifact.selection
    lines = [f"# {artifact.name} ({scale} scale)", "", title_of(artifact, runs), "", f"*{SCALE_NOTES[scale]}*", ""]
    if report.get("settings"):
        lines += [f"Settings at this scale: {settings_line(artifact, runs)}.", ""]
    if extra_overrides:
        lines += [f"Runs with the overrides `{' '.join(extra_overrides)}`.", ""]
    lines += [
        f"Selection: per cell, the {', '.join(selection.get('choose', [])) or 'run'} with the best "
        f"{selection['metric']} ({selection['mode']}) averaged over {', '.join(selection.get('average', [])) or 'nothing'}"
        + "".join(f"; the row {value_name(key, row)} is the best of {', '.join(value_name(key, m) for m in members)}"
                  for key, rows in (selection.get("merge") or {}).items() for row, members in rows.items()) + "; "
        f"`ours` is the mean of {report['metric']} over the chosen runs (`runs` of them), ± their standard deviation"
        + ("; `range` is their lowest to highest value" if (table["runs"] > 1).any() else "")
        + (f"; `solved` counts those with {report['metric']} >= {report['solved_at']:g} (our threshold)"
           if report.get("solved_at") is not None else "") + ".",
        "",
    ]
    if figure_name:
        lines += [f"![{artifact.name}]({figure_name})", ""]
    for finding in findings:
        lines += ["## The paper's finding and ours", "", finding_markdown(finding, table, report["metric"]), ""]
    found = ordering(table, cell_names(table, report["cells"]), selection["mode"])
    if found is not None:
        lines += ["## The paper's order and ours", "", ordering_markdown(found, report["metric"], selection["mode"]), ""]
    layout = artifact.layout
    if isinstance(layout, TableReport) and layout.columns:
        lines += ["## Table", "", wide_markdown(layout, table, selection["mode"],
                                                printed_ranking(artifact.paper, table, layout)), ""]
        notes = " ".join(note for note in (rules_markdown(layout, selection["mode"]),
                                           merged_choices_markdown(table, layout.columns)) if note)
        lines += [notes, ""] if notes else []
    if isinstance(layout, ScalingReport):
        lines += ["## Power laws", "", power_laws_markdown(scaling_lines(table, layout.lines, layout.cells),
                                                          layout.lines, report["metric"]), ""]
    reading = artifact.scales.get(scale, {}).get("reading")
    if reading:
        lines += ["## What this scale shows", "", reading.strip(), ""]
    if paper_columns_of(layout):
        lines += ["## The paper's columns and ours", "", paper_columns_markdown(artifact, table), ""]
    lines += ["## Cells", "", cells_markdown(artifact, table)]
    return "\n".join(lines) + "\n"
