"""One results page, ``results/reports/index.html``: every artifact at every scale the report folder holds, each with
its report's title, the paper's finding, what we measured and the verdict line (read from its page), its cell table
(ours, the sample std, the range of the runs and the paper's number beside it, from its ``.csv``), its figure and
links to its page, ``.csv`` and ``.runs.csv``; an artifact without a report at a scale is listed as such.

The page is static: one file, its style inline, no script, images and links by paths relative to it, so it opens
from the folder (or a clone) in any browser without a server. It is a function of the report files and the known
artifacts alone (no date in it), so the same reports give the same bytes."""

import html
import re
from pathlib import Path

import pandas as pd

from experiments.atomic import write_text_atomic
from experiments.config.artifacts import SCALES, known_artifacts, load_artifact
from experiments.display import value_name
from experiments.reports.committed_runs import SUFFIX as RUNS_SUFFIX
from experiments.reports.detail_table import SUFFIX as DETAIL_SUFFIX
from experiments.reports.page_summary import VERDICT_LINE
from experiments.reports.paper_numbers import PAPER_ROW
from experiments.reports.report_variants import variant_description
from experiments.reports.statements import digits_for

INDEX = "index.html"
SCALE_ORDER = ("mini", "paper", "smoke")  # the scale a reader comes for first
SUMMARY_START = "**What the paper found.**"
OPTIONS_PREFIX = "model.options."
TABLE_COLUMNS = ("ours", "sample std", "min", "max", "paper", "runs", "note")
STYLE = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2rem auto; max-width: 72rem;
       padding: 0 1rem; color: #1b1b1b; line-height: 1.45; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.3rem; margin-top: 2.5rem; border-bottom: 1px solid #ccc; }
h3 { font-size: 1.1rem; margin-top: 1.8rem; }
nav ul { columns: 2; } .verdict { font-size: 1.05rem; } .none { color: #777; font-style: italic; }
blockquote { margin: 0.4rem 0 0.4rem 1rem; padding-left: 0.8rem; border-left: 3px solid #aaa; color: #333; }
table { border-collapse: collapse; font-size: 0.85rem; margin: 0.6rem 0; }
th, td { border: 1px solid #ccc; padding: 0.15rem 0.5rem; text-align: left; } td.number { text-align: right; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.6rem 0; }
.links a { margin-right: 1rem; } .tag { font-weight: bold; }
.yes { color: #1a7f37; } .partly { color: #9a6700; } .no { color: #cf222e; }
"""


def inline(text: str) -> str:
    """A line of the pages' markdown as HTML: escaped, **bold**, `code` and [links](target)."""
    text = html.escape(text, quote=False)
    text = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", text)
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    return re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", r'<a href="\2">\1</a>', text)


def page_summary(page: str) -> tuple[str, list[str]]:
    """(the page's title line, the lines of its three questions) from a report page's markdown."""
    lines = page.splitlines()
    title = lines[2] if len(lines) > 2 else ""
    start = next((index for index, line in enumerate(lines) if line.startswith(SUMMARY_START)), None)
    end = next((index for index, line in enumerate(lines) if line.startswith(VERDICT_LINE)), None)
    if start is None or end is None:
        return title, []
    return title, [line for line in lines[start : end + 1] if line.strip()]


def summary_html(lines: list[str]) -> str:
    parts, quotes = [], []
    for line in lines:
        if line.startswith(">"):
            quotes.append(inline(line.lstrip("> ")))
            continue
        if quotes:
            parts.append("<blockquote>" + "<br>".join(quotes) + "</blockquote>")
            quotes = []
        verdict = line.startswith(VERDICT_LINE)
        answer = re.search(r"\*\*(Yes|Partly|No|Not measured|Not judged|Not tested)\*\*", line)
        css = {"Yes": "yes", "Partly": "partly", "No": "no"}.get(answer.group(1) if answer else "", "")
        parts.append(f'<p class="{"verdict " + css if verdict else ""}">{inline(line)}</p>')
    if quotes:
        parts.append("<blockquote>" + "<br>".join(quotes) + "</blockquote>")
    return "\n".join(parts)


def table_html(cells: pd.DataFrame, cell_keys: list[str]) -> str:
    """The cell table: the cell keys by their names, ours, its sample std and range over the runs, the paper's."""
    keys = [key for key in cell_keys if key in cells]
    if PAPER_ROW in cells:  # one model's variants go by the paper's name of their row, not by their options
        keys = [key for key in keys if not key.startswith(OPTIONS_PREFIX)] + [PAPER_ROW]
    columns = [column for column in TABLE_COLUMNS if column in cells and cells[column].notna().any()]
    if "runs" in cells and not (cells["runs"] > 1).any():
        columns = [column for column in columns if column not in ("sample std", "min", "max")]
    digits = digits_for(pd.concat([cells[column] for column in ("ours", "paper") if column in cells]))
    header = "".join(f"<th>{html.escape(key.rsplit('.', 1)[-1])}</th>" for key in keys) + "".join(
        f"<th>{html.escape({'min': 'lowest run', 'max': 'highest run'}.get(column, column))}</th>" for column in columns
    )
    rows = []
    for _, cell in cells.iterrows():
        shown = [
            html.escape(value_name(key, cell[key]).split("=", 1)[-1]) if pd.notna(cell[key]) else "" for key in keys
        ]
        for column in columns:
            value = cell[column]
            if pd.isna(value) or value == "":
                shown.append("")
            elif column == "runs":
                shown.append(str(int(value)))
            elif isinstance(value, (int, float)):
                shown.append(f"{value:.{digits if column != 'sample std' else max(digits, 3)}f}")
            else:
                shown.append(html.escape(str(value)))
        rows.append(
            "<tr>"
            + "".join(
                f'<td class="number">{value}</td>'
                if index >= len(keys) and columns[index - len(keys)] != "note"
                else f"<td>{value}</td>"
                for index, value in enumerate(shown)
            )
            + "</tr>"
        )
    return f"<table><tr>{header}</tr>\n" + "\n".join(rows) + "</table>"


def report_html(folder: Path, scale: str, stem: str, cell_keys: list[str]) -> str:
    """One report's section: its title, summary, table, figure and links (paths relative to the index)."""
    page = (folder / f"{stem}.md").read_text()
    title, summary = page_summary(page)
    made_with = variant_description(folder / stem)
    made_with = f"; made with {made_with}" if made_with else ""
    parts = [
        f'<h3 id="{scale}-{stem}">{html.escape(stem)} ({scale} scale{html.escape(made_with)})</h3>',
        f"<p>{inline(title)}</p>",
        summary_html(summary),
    ]
    links = [
        (f"{stem}.md", "page"),
        (f"{stem}.csv", "cells (.csv)"),
        (f"{stem}{RUNS_SUFFIX}", "runs (.runs.csv)"),
        (f"{stem}{DETAIL_SUFFIX}", "detail (.detail.csv)"),
        (f"{stem}.pdf", "figure (.pdf)"),
    ]
    parts.append(
        '<p class="links">'
        + "".join(f'<a href="{scale}/{name}">{label}</a>' for name, label in links if (folder / name).exists())
        + "</p>"
    )
    if (folder / f"{stem}.csv").exists():
        parts.append(table_html(pd.read_csv(folder / f"{stem}.csv"), cell_keys))
    if (folder / f"{stem}.png").exists():
        parts.append(f'<img src="{scale}/{stem}.png" alt="the figure of {html.escape(stem)} at {scale} scale">')
    return "\n".join(parts)


def stems_of(folder: Path, artifact: str) -> list[str]:
    """The reports of an artifact in a scale's folder: its own and its ablations' (``<artifact>-<hash>``)."""
    if not folder.is_dir():
        return []
    pages = sorted(path.stem for path in folder.glob("*.md"))
    return [stem for stem in pages if stem == artifact or re.fullmatch(re.escape(artifact) + r"-[0-9a-f]{8}", stem)]


def index_html(reports: Path) -> str:
    """The whole page for the report folder ``reports`` (results/reports)."""
    artifacts = known_artifacts()
    scales = [scale for scale in SCALE_ORDER if scale in SCALES]
    sections, contents = [], []
    for scale in scales:
        folder = reports / scale
        written = {name: stems_of(folder, name) for name in artifacts}
        count = sum(bool(stems) for stems in written.values())
        sections.append(f'<h2 id="{scale}">{scale} scale: {count} of {len(artifacts)} artifacts have a report</h2>')
        contents.append(f'<li><a href="#{scale}">{scale} scale</a>: {count} of {len(artifacts)} artifacts</li>')
        for name in artifacts:
            artifact = load_artifact(name)
            if not written[name]:
                why = "no runs at this scale" if scale in artifact.scales else f"no {scale} scale declared"
                sections.append(
                    f'<h3 id="{scale}-{name}">{html.escape(name)} ({scale} scale)</h3>'
                    f'<p class="none">{why}: no report.</p>'
                )
                continue
            cell_keys = list(artifact.at_scale(scale).report["cells"])
            sections += [report_html(folder, scale, stem, cell_keys) for stem in written[name]]
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            "<title>xlstm-suite: the paper's findings and ours</title>",
            f"<style>{STYLE}</style>",
            "</head>",
            "<body>",
            "<h1>xlstm-suite: the paper's findings and ours</h1>",
            "<p>Every artifact of the xLSTM paper (Beck et al., 2024) at every scale: what the paper found, what we "
            "measured and whether it shows, each statement computed from the cells by the rule its page states. "
            "<code>xlstm-suite report all --scale mini</code> writes this page; each report's own page has the rules, "
            "the checks and every table.</p>",
            "<nav><ul>" + "".join(contents) + "</ul></nav>",
            *sections,
            "</body>",
            "</html>",
            "",
        ]
    )


def write_index(reports: Path) -> Path:
    path = reports / INDEX
    write_text_atomic(path, index_html(reports))
    return path
