"""The paper's qualitative findings for an artifact (its YAML's ``paper.findings``), checked against our cells.

A finding quotes the paper, selects cells (``where``, e.g. the Parity task), sets what counts as solved
(``threshold`` on the reported metric) and says which models the paper finds solving the task and which not
(``expect: {solved: [...], unsolved: [...]}``). Ours is judged run by run, since at small scales one seed is one
draw: a model's runs in the selected cells (every seed of the chosen learning rate) are solved when all of them reach
the threshold, unsolved when none does, and mixed otherwise, which agrees with the paper only partly.
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
    why there is no value), ``values`` (the model's runs in the selected cells), ``solved_runs`` (how many of them
    reach the threshold) and ``agrees`` ("yes", "no", "partly" for mixed, or None without values)."""
    selected = table
    for key, value in finding.where.items():
        selected = selected[selected[key] == value]
    rows = []
    for expectation, models in finding.expect.items():
        for model in models:
            cells = selected[selected["model"] == model]
            values = [value for cell_values in cells["values"] for value in cell_values]
            solved_runs = sum(value >= finding.threshold for value in values)
            ours = outcome(solved_runs, len(values)) if values else (NOT_FINISHED if len(cells) else NOT_IN_GRID)
            rows.append({"model": model, "paper": expectation, "ours": ours, "values": values, "solved_runs": solved_runs,
                         "agrees": agreement(expectation, ours) if values else None})
    return pd.DataFrame(rows, columns=["model", "paper", "ours", "values", "solved_runs", "agrees"])


def outcome(solved_runs: int, runs: int) -> str:
    return "solved" if solved_runs == runs else ("unsolved" if solved_runs == 0 else "mixed")


def agreement(expectation: str, ours: str) -> str:
    return "yes" if ours == expectation else ("partly" if ours == "mixed" else "no")
