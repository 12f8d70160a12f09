"""The paper's qualitative findings for an artifact (its YAML's ``paper.findings``), checked against our cells.

A finding quotes the paper, selects cells (``where``, e.g. the Parity task), sets what counts as solved
(``threshold`` on the reported metric) and says which models the paper finds solving the task and which not
(``expect: {solved: [...], unsolved: [...]}``). A model is solved in ours when its value reaches the threshold in
every selected cell.
"""

from dataclasses import dataclass

import pandas as pd

EXPECTATIONS = ("solved", "unsolved")
NOT_IN_GRID, NOT_FINISHED = "not in this scale's grid", "no finished run"


@dataclass(frozen=True)
class Finding:
    quote: str
    source: str
    where: dict
    threshold: float
    expect: dict[str, list[str]]

    def __post_init__(self) -> None:
        unknown = sorted(set(self.expect) - set(EXPECTATIONS))
        if unknown:
            raise ValueError(f"finding expectations {unknown} are not valid; valid choices: {list(EXPECTATIONS)}")


def findings_of(paper: dict) -> list[Finding]:
    return [Finding(quote=item["quote"], source=item["source"], where=dict(item.get("where") or {}),
                    threshold=float(item["threshold"]), expect={key: list(models) for key, models in item["expect"].items()})
            for item in paper.get("findings") or []]


def check(finding: Finding, table: pd.DataFrame) -> pd.DataFrame:
    """One row per model the finding names: ``paper`` (solved / unsolved), ``ours`` (solved / unsolved / mixed, or
    why there is no value), our values on the selected cells, and ``agrees`` (True, False, or None without values)."""
    selected = table
    for key, value in finding.where.items():
        selected = selected[selected[key] == value]
    rows = []
    for expectation, models in finding.expect.items():
        for model in models:
            cells = selected[selected["model"] == model]
            values = cells["ours"].dropna()
            ours = outcome(values, finding.threshold) if len(values) else (NOT_FINISHED if len(cells) else NOT_IN_GRID)
            rows.append({"model": model, "paper": expectation, "ours": ours, "values": list(values),
                         "agrees": ours == expectation if len(values) else None})
    return pd.DataFrame(rows, columns=["model", "paper", "ours", "values", "agrees"])


def outcome(values: pd.Series, threshold: float) -> str:
    solved = values >= threshold
    return "solved" if solved.all() else ("unsolved" if not solved.any() else "mixed")
