"""Whether our cells fall in the paper's order: at a scale far below the paper's our numbers cannot match its numbers,
but the order of the models can. Compares the cells that have both our value and the paper's, pair by pair."""

from dataclasses import dataclass
from itertools import combinations

import pandas as pd
from scipy import stats

from experiments.display import value_name
from experiments.reports.paper_numbers import PAPER_ROW


@dataclass(frozen=True)
class Ordering:
    """``ours`` and ``paper``: the compared cells' names, best first; ``pairs``: how many pairs of them there are;
    ``agreeing``: the pairs ordered alike; ``disagreeing``: the others, each as (the paper's better, its worse);
    ``kendall_tau``: Kendall's tau-b of ours against the paper's (1: the same order, -1: reversed)."""

    ours: list[str]
    paper: list[str]
    pairs: int
    agreeing: int
    disagreeing: list[tuple[str, str]]
    kendall_tau: float


def cell_names(table: pd.DataFrame, cells: list[str]) -> list[str]:
    """Each row's name from the cell keys whose values differ between rows (the model first), e.g. "RWKV-6 lr=0.0004";
    a key that is the same in every row names nothing, nor does a key in the rows whose cells lack it. A row that
    takes a printed row of the paper's (one model's variants, column PAPER_ROW) goes by its model and that row's
    name, e.g. "xLSTM[1:0] Forget Gate"."""
    varying = [key for key in cells if table[key].nunique() > 1] or cells[:1]
    printed = table[PAPER_ROW] if PAPER_ROW in table else pd.Series("", index=table.index)
    return [f"{value_name('model', row['model'])} {printed[index]}" if printed[index] and "model" in cells
            else " ".join(value_name(key, row[key]) for key in varying if pd.notna(row[key]))
            for index, row in table.iterrows()]


def ordering(table: pd.DataFrame, names: list[str], mode: str) -> Ordering | None:
    """The order of the rows of ``table`` (columns ``ours`` and ``paper``) with both values, best first by ``mode``
    ("min": lower is better, as perplexity; "max": higher); None for fewer than two such rows. Ties are neither
    agreeing nor disagreeing pairs."""
    compared = table.assign(name=names).dropna(subset=["ours", "paper"])
    if len(compared) < 2:
        return None
    ascending = mode == "min"
    sign = 1 if ascending else -1
    agreeing, disagreeing = 0, []
    for first, second in combinations(compared.itertuples(), 2):
        ours_order = sign * (first.ours - second.ours)
        paper_order = sign * (first.paper - second.paper)
        if ours_order * paper_order > 0:
            agreeing += 1
        elif ours_order * paper_order < 0:
            better, worse = (first, second) if paper_order < 0 else (second, first)
            disagreeing.append((better.name, worse.name))
    tau = stats.kendalltau(compared["ours"], compared["paper"]).statistic
    return Ordering(ours=list(compared.sort_values("ours", ascending=ascending)["name"]),
                    paper=list(compared.sort_values("paper", ascending=ascending)["name"]),
                    pairs=len(compared) * (len(compared) - 1) // 2, agreeing=agreeing, disagreeing=disagreeing,
                    kendall_tau=float(tau))


def ordering_markdown(found: Ordering, metric: str, mode: str) -> str:
    better = "lower" if mode == "min" else "higher"
    lines = [f"Best first ({better} {metric} is better), over the {len(found.ours)} cells with our value and the "
             "paper's:", "", f"- the paper: {' < '.join(found.paper) if mode == 'min' else ' > '.join(found.paper)}",
             f"- ours: {' < '.join(found.ours) if mode == 'min' else ' > '.join(found.ours)}", "",
             f"{found.agreeing} of {found.pairs} pairs are in the paper's order (Kendall's tau {found.kendall_tau:+.2f})."]
    if found.disagreeing:
        lines += ["Pairs in the other order (the paper's better first): "
                  + "; ".join(f"{better_one} / {worse}" for better_one, worse in found.disagreeing) + "."]
    return "\n".join(lines)
