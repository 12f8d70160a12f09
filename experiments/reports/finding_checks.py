"""The check of each kind of finding (experiments.reports.findings) against a report's cell table: its rule in words,
a table of what it judged (one row per model, pair or group) with yes / partly / no, the finding's verdict and one
sentence with the numbers. Every word of the verdict comes from the cells."""

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from experiments.display import model_name, task_name, value_name
from experiments.reports.findings import (
    LARGEST,
    NOT_FINISHED,
    NOT_IN_GRID,
    NOT_MEASURED,
    Finding,
    agreement,
    holds_of,
    outcome,
)
from experiments.reports.paper_numbers import PAPER_ROW
from experiments.reports.statements import (
    CHANGE_RULE,
    GROWTH_RULE,
    ORDER_PARTLY,
    ORDER_RULE,
    change_class,
    confidence_interval,
    digits_for,
    growth_agreement,
    growth_class,
    growth_exponent,
    interval_overlaps,
    order_agreement,
    relative_change,
    signed,
)

OUT_OF_MEMORY_AT = 0.5  # a cell whose runs' mean out-of-memory mark reaches this ran out of memory


@dataclass(frozen=True)
class CheckContext:
    """What a check needs besides the finding and the cells: the cell keys, the report metric (the column ``ours``),
    the selection mode (min: lower is better), the layout's swept key and out-of-memory metric, and each row's page
    name."""

    cells: list[str]
    metric: str
    mode: str
    x: str | None = None
    out_of_memory: str | None = None
    names: pd.Series | None = None
    confidence: float | None = None  # a points layout's: comparisons also ask whether the t-intervals are apart

    def better(self, first: float, second: float) -> bool:
        return first < second if self.mode == "min" else first > second

    @property
    def better_word(self) -> str:
        return "lower" if self.mode == "min" else "higher"


@dataclass(frozen=True)
class Checked:
    rule: str
    header: list[str]
    rows: list[list[str]]
    agrees: list[str | None]
    holds: str
    summary: str


def selected(finding: Finding, table: pd.DataFrame) -> pd.DataFrame:
    """The cells of ``where``; the value ``largest`` selects the largest value of its key among the cells (the
    hardest setting at every scale, whose grids differ)."""
    for key, value in finding.where.items():
        table = table[table[key] == (table[key].max() if value == LARGEST else value)]
    return table


def where_words(finding: Finding) -> str:
    where = ", ".join(
        f"the largest {key}" if value == LARGEST else f"{key} {task_name(str(value)) if key == 'task' else value}"
        for key, value in finding.where.items()
    )
    return f" on {where}" if where else ""


def subject_mask(table: pd.DataFrame, subject: str, context: CheckContext) -> pd.Series:
    """The rows of a subject: a model by its registry name, or a cell by its page name or the paper's printed row."""
    mask = table["model"] == subject if "model" in table else pd.Series(False, index=table.index)
    if context.names is not None:
        mask |= context.names.reindex(table.index) == subject
    if PAPER_ROW in table:
        mask |= table[PAPER_ROW] == subject
    return mask


def short_name(cell: pd.Series, context: CheckContext) -> str:
    """A cell's model (and printed row) where its group says the rest."""
    printed = cell.get(PAPER_ROW, "") if PAPER_ROW in cell.index else ""
    return (
        f"{model_name(cell['model'])}{' ' + printed if printed else ''}"
        if "model" in cell.index
        else str(context.names[cell.name])
    )


def subject_name(subject: str) -> str:
    return model_name(subject)


def metric_column(finding: Finding, context: CheckContext) -> str:
    """The cell table's column of the finding's metric: ``ours`` for the report metric."""
    return "ours" if finding.metric in (None, context.metric) else finding.metric


def cell_values(cells: pd.DataFrame) -> list[float]:
    return [value for values in cells["values"] for value in values]


def fmt(value: float, digits: int) -> str:
    return "" if pd.isna(value) else f"{value:.{digits}f}"


def check_runs(finding: Finding, table: pd.DataFrame, context: CheckContext) -> Checked:
    """solved / unsolved at a threshold, or below / above another model's mean, run by run."""
    selection = selected(finding, table)
    reference = None
    if finding.compares:
        values = cell_values(selection[selection["model"] == finding.than])
        reference = sum(values) / len(values) if values else None
    all_values = [value for values in selection["values"] for value in values]
    digits = digits_for([*all_values, *([reference] if reference is not None else [])])
    intervals = finding.compares and context.confidence is not None
    if intervals:
        reference_interval = confidence_interval(
            tuple(cell_values(selection[selection["model"] == finding.than])), context.confidence
        )
    rows, agrees = [], []
    for expectation, models in finding.expect.items():
        for model in models:
            cells = selection[subject_mask(selection, model, context)]
            values = cell_values(cells)
            judged = bool(values) and (reference is not None or not finding.compares)
            counted = sum(finding.counts(value, reference) for value in values) if judged else 0
            ours = (
                outcome(finding.counted, counted, len(values))
                if judged
                else NOT_FINISHED
                if len(cells) and not values
                else f"no finished run of {model_name(finding.than)}"
                if values
                else NOT_IN_GRID
            )
            agrees_one = agreement(expectation, ours) if judged else None
            row = [
                subject_name(model),
                expectation,
                ours,
                f"{counted} of {len(values)}" if judged else "",
                ", ".join(fmt(value, digits) for value in values),
            ]
            if intervals:
                low, high = confidence_interval(tuple(values), context.confidence)
                apart = interval_overlaps({"model": (low, high), "reference": reference_interval}).apart
                row += [
                    f"[{fmt(low, digits)}, {fmt(high, digits)}]" if not math.isnan(low) else "",
                    ("yes" if apart else "no") if not math.isnan(low) else "",
                ]
                if agrees_one == "yes" and not apart:
                    agrees_one = "partly"  # in direction, within the spread of the runs
            if finding.words:
                row.insert(2, finding.words.get(model, ""))
            rows.append(row)
            agrees.append(agrees_one)
    if finding.compares:
        mean = "no finished run" if reference is None else fmt(reference, digits)
        rule = (
            f"Below means {context.metric} < the mean of {model_name(finding.than)}'s runs ({mean})"
            f"{where_words(finding)}, judged run by run: a model is below when all its runs are, above when none "
            "is, mixed otherwise (partly)."
        )
        if intervals:
            low, high = reference_interval
            rule += (
                f" A model below in every run agrees fully only when its {context.confidence:.0%} t-interval "
                f"(Student's t over its runs) and {model_name(finding.than)}'s "
                f"([{fmt(low, digits)}, {fmt(high, digits)}]) are apart (share no value), partly otherwise."
            )
        counted_header, side = "runs below", "below"
    else:
        rule = (
            f"Solved means {context.metric} >= {finding.threshold:g}{where_words(finding)} (our threshold; the paper "
            "states none), judged run by run: a model is solved when all its runs are, unsolved when none is, "
            "mixed otherwise (partly)."
        )
        counted_header, side = "runs solved", "solved"
    header = ["model", "the paper (as we read it)", "ours", counted_header, "our values"]
    if intervals:
        header += [f"{context.confidence:.0%} t-interval", f"apart from {model_name(finding.than)}'s"]
    if finding.words:
        header.insert(2, "the paper's words")
    judged = [(row[0], agrees_one) for row, agrees_one in zip(rows, agrees) if agrees_one is not None]
    names = {
        verdict: [name for name, agrees_one in judged if agrees_one == verdict] for verdict in ("yes", "partly", "no")
    }
    summary = (
        f"ours agrees for {len(names['yes'])} of the {len(judged)} models with results at this scale"
        + (
            f"; partly ({side} in some runs, not all{', or an interval not apart' if intervals else ''}) for "
            f"{', '.join(names['partly'])}"
            if names["partly"]
            else ""
        )
        + (f"; it differs for {', '.join(names['no'])}" if names["no"] else "")
    )
    return Checked(rule, header, rows, agrees, holds_of(agrees), summary)


def group_keys(finding: Finding, context: CheckContext, table: pd.DataFrame) -> list[str]:
    """The cell keys whose values are the groups of an order: ``within``, by default the task where it varies."""
    if finding.within is not None:
        return list(finding.within)
    return ["task"] if "task" in context.cells and table["task"].nunique() > 1 else []


def group_name(keys: list[str], row: pd.Series) -> str:
    return " ".join(value_name(key, row[key]) for key in keys)


def check_order(finding: Finding, table: pd.DataFrame, context: CheckContext) -> Checked:
    """Ours in the order of the paper's numbers, pairs within a group."""
    selection = selected(finding, table)
    keys = group_keys(finding, context, selection)
    names = list(context.names.reindex(selection.index)) if context.names is not None else list(selection.index)
    groups = [group_name(keys, row) for _, row in selection.iterrows()]
    found = order_agreement(names, groups, list(selection["ours"]), list(selection["paper"]), context.mode)
    within = " and ".join(keys) if keys else "table"
    rule = (
        ORDER_RULE.format(within=within, across=" (cells of different groups are on different scales)" if keys else "")
        + "."
    )
    rows, agrees = [], []
    for group, (agreeing, pairs) in found.groups.items():
        disagreeing = found.disagreeing_in[group]
        share = agreeing / pairs if pairs else math.nan
        agrees.append(
            None if not pairs else "yes" if agreeing == pairs else "partly" if share >= ORDER_PARTLY else "no"
        )
        rows.append(
            [
                group or "every cell",
                f"{agreeing} of {pairs}",
                "; ".join(f"{better} / {worse}" for better, worse in disagreeing) or "none",
            ]
        )
    verdict = {"yes": "holds", "partly": "holds partly", "no": "does not hold", None: "not measured here"}[found.holds]
    header = [
        "group" if keys else "cells",
        "pairs in the paper's order",
        "pairs in the other order (the paper's better first)",
    ]
    return Checked(rule, header, rows, agrees, verdict, found.sentence().rstrip("."))


def ranked(cells: pd.DataFrame, context: CheckContext) -> pd.DataFrame:
    return cells.dropna(subset=["ours"]).sort_values("ours", ascending=context.mode == "min", kind="stable")


def check_rank(finding: Finding, table: pd.DataFrame, context: CheckContext) -> Checked:
    """Each named model among the best ``top`` cells of each group."""
    top, by = int(finding.rank.get("top", 1)), finding.rank.get("by")
    if isinstance(by, list):  # the first of them among the cells (a scale's stand-in size key)
        by = next((key for key in by if key in context.cells), None)
    selection = selected(finding, table)
    groups = (
        [(value_name(by, value), cells) for value, cells in selection.groupby(by, sort=False)]
        if by
        else [("", selection)]
    )
    digits = digits_for(selection["ours"])
    seeded = bool((selection["runs"] > 1).any())  # cells of several runs: the runs' values and their agreement too
    rows, agrees, placed = [], [], 0
    absent = [model for model in finding.rank["models"] if not subject_mask(selection, model, context).any()]
    for model in absent:  # one row, not one per group
        rows.append(["", subject_name(model), NOT_IN_GRID, "", "", *([""] if seeded else [])])
        agrees.append(None)
    for group, cells in groups:
        order = ranked(cells, context)
        for model in [model for model in finding.rank["models"] if model not in absent]:
            mask = subject_mask(order, model, context).to_numpy()
            mine = order[mask]
            if mine.empty:
                rows.append([group, subject_name(model), NOT_FINISHED, "", "", *([""] if seeded else [])])
                agrees.append(None)
                continue
            position = order.index.get_loc(mine.index[0]) + 1
            best = order.iloc[0]
            best_name = short_name(best, context) if by else context.names[best.name]
            runs = mine.iloc[0]["values"]
            row = [
                group,
                subject_name(model),
                f"{position} of {len(order)}",
                fmt(mine.iloc[0]["ours"], digits),
                f"{best_name} ({fmt(best['ours'], digits)})",
            ]
            if seeded:
                row.append(", ".join(fmt(value, digits) for value in runs))
            rows.append(row)
            placed += position <= top
            agrees.append(rank_agreement(position <= top, runs, place_boundary(order, mask, top, position), context))
    for row in rows:
        if not by:
            row.pop(0)
    among = "the best cell" if top == 1 else f"among the best {top} cells"
    rule = (
        f"A model agrees in a group when one of its cells is {among} there by {context.metric} ({context.better_word} "
        f"is better){f', in each group of {by}' if by else ''}."
    )
    if seeded:
        inside, places = (
            ("first", "the first place") if top == 1 else (f"in the first {top}", f"the first {top} places")
        )
        rule += (
            f" With several runs in a cell (its seeds), every run must keep the place: a model placed {inside} agrees "
            f"only partly when one of its runs is not {context.better_word} than the mean of the best cell of another "
            f"model placed after {places}; a model placed after {places} agrees partly when one of its runs is "
            f"{context.better_word} than the mean of the last cell in {places}."
        )
    header = [
        *([by] if by else []),
        "model",
        "its place",
        "its value",
        "the best cell",
        *(["its runs"] if seeded else []),
    ]
    judged = sum(agrees_one is not None for agrees_one in agrees)
    summary = f"{placed} of the {judged} places {'is' if judged == 1 else 'are'} {among}"
    if partly := sum(agrees_one == "partly" for agrees_one in agrees):
        summary += f" by the cells' means; in {partly} of them a run says otherwise"
    return Checked(rule, header, rows, agrees, holds_of(agrees), summary)


def place_boundary(order: pd.DataFrame, mine: np.ndarray, top: int, position: int) -> float | None:
    """The mean a model's runs are held against (``order``: a group's cells best first, ``mine``: the model's cells
    among them; ``position``: its best cell's place): placed among the best ``top``, the best other cell below them;
    outside them, the last cell among them; None when there is none."""
    others = order[~mine]
    if position <= top:
        below = others.iloc[max(top - int(mine[:top].sum()), 0) :]
        return None if below.empty else float(below.iloc[0]["ours"])
    return float(order.iloc[top - 1]["ours"])


def rank_agreement(placed: bool, runs: tuple, boundary: float | None, context: CheckContext) -> str:
    """yes / no by the cell's mean (``placed``: among the best), partly where a run of the cell says otherwise than
    its mean against ``boundary`` (place_boundary)."""
    if len(runs) < 2 or boundary is None:
        return "yes" if placed else "no"
    beating = sum(context.better(value, boundary) for value in runs)
    if placed:
        return "yes" if beating == len(runs) else "partly"
    return "partly" if beating else "no"


def model_cells(selection: pd.DataFrame, model: str, context: CheckContext, column: str) -> pd.DataFrame:
    """A model's cells with a value of ``column`` and not out of memory, by the swept x."""
    cells = selection[subject_mask(selection, model, context)]
    if context.out_of_memory in cells:
        cells = cells[~(cells[context.out_of_memory].fillna(0) >= OUT_OF_MEMORY_AT)]
    return cells.dropna(subset=[column]).sort_values(context.x)


def check_growth(finding: Finding, table: pd.DataFrame, context: CheckContext) -> Checked:
    column = metric_column(finding, context)
    selection = selected(finding, table)
    rows, agrees = [], []
    for expected, models in finding.growth.items():
        for model in models:
            cells = model_cells(selection, model, context, column)
            k = growth_exponent(cells[context.x], cells[column]) if len(cells) else math.nan
            found = growth_class(k)
            agrees.append(None if math.isnan(k) else growth_agreement(expected, found))
            rows.append(
                [
                    subject_name(model),
                    expected,
                    found
                    if not math.isnan(k)
                    else (NOT_IN_GRID if not subject_mask(selection, model, context).any() else "fewer than two sizes"),
                    "" if math.isnan(k) else signed(k),
                    ", ".join(f"{x:g}" for x in cells[context.x]),
                ]
            )
    rule = (
        f"Growth of {finding.metric or context.metric} in {context.x}, {GROWTH_RULE} (cells out of memory left "
        "out). A model agrees when its class is the paper's, partly when both grow faster than linearly (or "
        "both slower)."
    )
    header = ["model", "the paper", "ours", "k", f"{context.x.rsplit('.', 1)[-1]} measured"]
    yes = sum(agrees_one == "yes" for agrees_one in agrees)
    summary = (
        f"{yes} of {sum(agrees_one is not None for agrees_one in agrees)} models grow as the paper finds ("
        + ", ".join(f"{row[0]} {row[2]}{f' (k {row[3]})' if row[3] else ''}" for row in rows)
        + ")"
    )
    return Checked(rule, header, rows, agrees, holds_of(agrees), summary)


def check_change(finding: Finding, table: pd.DataFrame, context: CheckContext) -> Checked:
    column = metric_column(finding, context)
    selection = selected(finding, table)
    digits = digits_for(selection[column])
    rows, agrees = [], []
    for expected, models in finding.change.items():
        for model in models:
            cells = model_cells(selection, model, context, column)
            if len(cells) < 2:
                rows.append(
                    [
                        subject_name(model),
                        expected,
                        NOT_IN_GRID
                        if cells.empty and not subject_mask(selection, model, context).any()
                        else "fewer than two sizes",
                        "",
                    ]
                )
                agrees.append(None)
                continue
            first, last = cells.iloc[0], cells.iloc[-1]
            change = relative_change(first[column], last[column])
            found = change_class(change, finding.tolerance)
            agrees.append("yes" if found == expected else "no")
            rows.append(
                [
                    subject_name(model),
                    expected,
                    found,
                    f"{fmt(first[column], digits)} at {first[context.x]:g} -> {fmt(last[column], digits)} at "
                    f"{last[context.x]:g} ({change:+.1%})",
                ]
            )
    rule = CHANGE_RULE.format(x=context.x, tolerance=finding.tolerance) + f" (of {finding.metric or context.metric})."
    header = ["model", "the paper", "ours", "smallest -> largest"]
    yes = sum(agrees_one == "yes" for agrees_one in agrees)
    summary = (
        f"{yes} of {sum(agrees_one is not None for agrees_one in agrees)} models change as the paper finds ("
        + ", ".join(f"{row[0]} {row[3].rsplit('(', 1)[-1].rstrip(')')}" for row in rows if row[3])
        + ")"
    )
    return Checked(rule, header, rows, agrees, holds_of(agrees), summary)


def compared_values(selection: pd.DataFrame, subject: str, finding: Finding, context: CheckContext) -> dict:
    """Where a pair is compared -> the subject's value there: each of ``metrics``, each x, or its one value (the mean
    of its cells)."""
    cells = selection[subject_mask(selection, subject, context)]
    if context.out_of_memory in cells:
        cells = cells[~(cells[context.out_of_memory].fillna(0) >= OUT_OF_MEMORY_AT)]
    if finding.metrics:
        return {
            metric.rsplit("/", 1)[-1]: cells[metric].mean() for metric in finding.metrics if cells[metric].notna().any()
        }
    if context.x is not None and context.x in cells:
        others = other_varying_keys(selection, context)
        if not others:
            return {f"{x:g}": value for x, value in zip(cells[context.x], cells["ours"]) if not pd.isna(value)}
        keys = [*others, context.x]
        return {group_name(keys, cell): cell["ours"] for _, cell in cells.iterrows() if not pd.isna(cell["ours"])}
    return {"": cells["ours"].mean()} if cells["ours"].notna().any() else {}


def other_varying_keys(selection: pd.DataFrame, context: CheckContext) -> list[str]:
    """The cell keys besides the model and the swept x whose values differ among the selected cells (a lines report's
    panels and rows): a pair is compared cell by cell there, not x by x."""
    return [
        key
        for key in context.cells
        if key not in ("model", context.x) and key in selection and selection[key].nunique() > 1
    ]


def check_beats(finding: Finding, table: pd.DataFrame, context: CheckContext) -> Checked:
    selection = selected(finding, table)
    digits = digits_for([*selection["ours"], *(value for metric in finding.metrics for value in selection[metric])])
    rows, agrees = [], []
    for first, second in finding.beaten_pairs:
        absent = [subject for subject in (first, second) if not subject_mask(table, subject, context).any()]
        if absent:  # a model the scale does not run
            rows.append([subject_name(first), subject_name(second), NOT_IN_GRID, ""])
            agrees.append(None)
            continue
        mine, theirs = (compared_values(selection, subject, finding, context) for subject in (first, second))
        shared = [where for where in mine if where in theirs]
        better = [where for where in shared if context.better(mine[where], theirs[where])]
        agrees.append(None if not shared else "yes" if len(better) == len(shared) else "partly" if better else "no")
        rows.append(
            [
                subject_name(first),
                subject_name(second),
                f"{len(better)} of {len(shared)}",
                "; ".join(
                    f"{where + ': ' if where else ''}{fmt(mine[where], digits)} vs {fmt(theirs[where], digits)}"
                    for where in shared
                ),
            ]
        )
    where = (
        f"in each of {', '.join(metric.rsplit('/', 1)[-1] for metric in finding.metrics)}"
        if finding.metrics
        else f"in every cell ({', '.join([*other_varying_keys(selection, context), context.x])}) both ran"
        if context.x and other_varying_keys(selection, context)
        else f"at every {context.x} both ran"
        if context.x
        else "in its value (the mean of its cells)"
    )
    rule = (
        f"The first model agrees when its {finding.metric or context.metric} is {context.better_word} (better) than "
        f"the second's {where}{where_words(finding)}; partly when it is at some of them."
    )
    header = ["model", "than", "better at", "values (first vs second)"]
    summary = "; ".join(f"{row[0]} better than {row[1]} at {row[2]}" for row in rows if row[2] != NOT_IN_GRID) or (
        "no pair of its models runs at this scale"
    )
    return Checked(rule, header, rows, agrees, holds_of(agrees), summary)


def check_out_of_memory(finding: Finding, table: pd.DataFrame, context: CheckContext) -> Checked:
    if context.out_of_memory is None:
        raise ValueError("out_of_memory_first needs a report with an out_of_memory metric")
    selection = selected(finding, table)
    firsts = {}
    for model in dict.fromkeys(selection["model"]):
        cells = selection[selection["model"] == model]
        out = cells[cells[context.out_of_memory].fillna(0) >= OUT_OF_MEMORY_AT]
        firsts[model] = out[context.x].min() if len(out) else math.inf
    largest = selection[context.x].max()
    rows, agrees = [], []
    for model in finding.out_of_memory_first:
        if model not in firsts:
            rows.append([subject_name(model), NOT_IN_GRID, ""])
            agrees.append(None)
            continue
        others = [first for other, first in firsts.items() if other not in finding.out_of_memory_first]
        smallest_other = min(others, default=math.inf)
        mine = firsts[model]
        agrees.append("yes" if mine < smallest_other else "partly" if mine == smallest_other < math.inf else "no")
        rows.append(
            [
                subject_name(model),
                f"none up to {largest:g}" if math.isinf(mine) else f"{mine:g}",
                f"none up to {largest:g}" if math.isinf(smallest_other) else f"{smallest_other:g}",
            ]
        )
    rule = (
        f"A model agrees when the smallest {context.x} at which it runs out of memory is below every other model's "
        "(partly when another runs out at the same one)."
    )
    header = ["model", "its first out of memory", "the others' first"]
    summary = "; ".join(
        f"{model_name(model)} " + ("never" if math.isinf(first) else f"at {first:g}") for model, first in firsts.items()
    )
    return Checked(rule, header, rows, agrees, holds_of(agrees), "out of memory first: " + summary)


CHECK_KINDS = {
    "solved": check_runs,
    "compare": check_runs,
    "order": check_order,
    "rank": check_rank,
    "growth": check_growth,
    "change": check_change,
    "beats": check_beats,
    "out_of_memory_first": check_out_of_memory,
}


def check(finding: Finding, table: pd.DataFrame, context: CheckContext) -> Checked:
    return CHECK_KINDS[finding.kind](finding, table, context)


def checked_markdown(finding: Finding, checked: Checked) -> str:
    lines = [
        f"> {finding.quote}",
        ">",
        f"> -- the paper, {finding.source}",
        "",
        f"Rule: {checked.rule}",
        "",
        "| " + " | ".join([*checked.header, "agrees"]) + " |",
        "|" + " --- |" * (len(checked.header) + 1),
    ]
    for row, agrees_one in zip(checked.rows, checked.agrees):
        shown = "-" if agrees_one is None else ("**no**" if agrees_one == "no" else agrees_one)
        lines.append("| " + " | ".join([*row, shown]) + " |")
    verdict = "is not measured" if checked.holds == NOT_MEASURED else checked.holds
    lines += ["", f"**The finding {verdict}** at this scale: {checked.summary}."]
    return "\n".join(lines)
