"""Whether our cells fall in the paper's order: at a scale far below the paper's our numbers cannot match its numbers,
but the order of the models can. Compares the cells that have both our value and the paper's, pair by pair, within
each task only (cells of two tasks are on different scales: any Pathfinder accuracy is above any ListOps one)."""

import pandas as pd

from experiments.display import value_name
from experiments.reports.paper_numbers import PAPER_ROW
from experiments.reports.statements import ORDER_RULE, OrderAgreement, order_agreement

GROUP_KEYS = ("task",)  # cell keys whose values are never compared with each other


def cell_names(table: pd.DataFrame, cells: list[str]) -> list[str]:
    """Each row's name from the cell keys whose values differ between rows (the model first), e.g. "RWKV-6 lr=0.0004";
    a key that is the same in every row names nothing, nor does a key in the rows whose cells lack it. A row that
    takes a printed row of the paper's (one model's variants, column PAPER_ROW) goes by its model and that row's
    name, e.g. "xLSTM[1:0] Forget Gate"."""
    varying = [key for key in cells if table[key].nunique() > 1] or cells[:1]
    printed = table[PAPER_ROW] if PAPER_ROW in table else pd.Series("", index=table.index)
    return [
        f"{value_name('model', row['model'])} {printed[index]}"
        if printed[index] and "model" in cells
        else " ".join(value_name(key, row[key]) for key in varying if pd.notna(row[key]))
        for index, row in table.iterrows()
    ]


def order_groups(table: pd.DataFrame, cells: list[str]) -> list[str]:
    """Keys of GROUP_KEYS among the cells that vary: the groups whose cells are ordered among themselves only."""
    return [key for key in GROUP_KEYS if key in cells and table[key].nunique() > 1]


def ordering(table: pd.DataFrame, names: list[str], mode: str, groups: list[str]) -> OrderAgreement | None:
    """The pairs of rows of ``table`` (columns ``ours`` and ``paper``) within each group of ``groups`` (cell keys);
    None for fewer than one such pair."""
    group_of = [" ".join(value_name(key, row[key]) for key in groups) for _, row in table.iterrows()]
    found = order_agreement(names, group_of, list(table["ours"]), list(table["paper"]), mode)
    return found if found.pairs else None


def ordering_markdown(
    table: pd.DataFrame, names: list[str], found: OrderAgreement, metric: str, mode: str, groups: list[str]
) -> str:
    """Per group, the paper's order and ours (best first), the agreeing pairs and the rule."""
    ascending, joiner = mode == "min", " < " if mode == "min" else " > "
    shown = table.assign(
        name=names, group=[" ".join(value_name(key, row[key]) for key in groups) for _, row in table.iterrows()]
    ).dropna(subset=["ours", "paper"])
    within = " and ".join(groups) if groups else "table"
    lines = [
        f"Best first ({'lower' if ascending else 'higher'} {metric} is better), over the {len(shown)} cells with "
        f"our value and the paper's; rule: {ORDER_RULE.format(within=within, across=' (cells of different ' + within + 's are on different scales)' if groups else '')}.",
        "",
    ]
    for group, cells in shown.groupby("group", sort=False):
        prefix = f"{group}: " if group else ""
        lines += [
            f"- {prefix}the paper: {joiner.join(cells.sort_values('paper', ascending=ascending, kind='stable')['name'])}",
            f"- {prefix}ours: {joiner.join(cells.sort_values('ours', ascending=ascending, kind='stable')['name'])}",
        ]
    lines += ["", found.sentence()]
    if found.disagreeing:
        lines += [
            "Pairs in the other order (the paper's better first): "
            + "; ".join(f"{better} / {worse}" for better, worse in found.disagreeing)
            + "."
        ]
    return "\n".join(lines)
