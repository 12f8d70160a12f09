"""The paper's qualitative findings for an artifact (its YAML's ``paper.findings``), checked against our cells.

A finding quotes the paper, selects cells (``where``, e.g. the Parity task) and says what the paper finds of which
models, in one of two forms:

    expect: {solved: [...], unsolved: [...]}   with ``threshold``: the reported metric at which a run solves its task
    expect: {below: [...], above: [...]}       with ``than``: a model whose runs' mean in the selected cells is the
                                               reference (e.g. "xLSTM's MSE is below LSTM's")

Ours is judged run by run, since at small scales one seed is one draw: a model's runs in the selected cells (every
seed of the chosen learning rate) meet the expectation when all of them do (reach the threshold, or lie below / above
the reference mean), its opposite when none does, and are mixed otherwise, which agrees with the paper only partly.
"""

from dataclasses import dataclass

import pandas as pd

OPPOSITES = {"solved": "unsolved", "unsolved": "solved", "below": "above", "above": "below"}
EXPECTATIONS = tuple(OPPOSITES)
NOT_IN_GRID, NOT_FINISHED = "not in this scale's grid", "no finished run"


@dataclass(frozen=True)
class Finding:
    quote: str
    source: str
    where: dict
    threshold: float | None
    expect: dict[str, list[str]]
    than: str | None = None

    def __post_init__(self) -> None:
        unknown = sorted(set(self.expect) - set(EXPECTATIONS))
        if unknown:
            raise ValueError(f"finding expectations {unknown} are not valid; valid choices: {list(EXPECTATIONS)}")
        if self.compares and set(self.expect) & {"solved", "unsolved"}:
            raise ValueError("a finding expects solved/unsolved (with a threshold) or below/above (with than), not both")
        if self.compares and self.than is None:
            raise ValueError("a finding that expects below/above needs 'than', the model whose mean they compare with")
        if not self.compares and self.threshold is None:
            raise ValueError("a finding that expects solved/unsolved needs a 'threshold'")

    @property
    def compares(self) -> bool:
        """Below / above another model's mean, rather than solved / unsolved at a threshold."""
        return bool(set(self.expect) & {"below", "above"})

    @property
    def counted(self) -> str:
        """The expectation whose runs are counted: "solved" (at the threshold) or "below" (the reference mean)."""
        return "below" if self.compares else "solved"

    def counts(self, value: float, reference: float | None) -> bool:
        """Whether one run meets the counted expectation (``reference``: the ``than`` model's mean)."""
        return value < reference if self.compares else value >= self.threshold


def findings_of(paper: dict) -> list[Finding]:
    return [Finding(quote=item["quote"], source=item["source"], where=dict(item.get("where") or {}),
                    threshold=None if item.get("threshold") is None else float(item["threshold"]),
                    expect={key: list(models) for key, models in item["expect"].items()}, than=item.get("than"))
            for item in paper.get("findings") or []]


def reference_mean(finding: Finding, selected: pd.DataFrame) -> float | None:
    """The mean of the ``than`` model's runs in the selected cells (None without a comparison or its runs)."""
    if not finding.compares:
        return None
    values = [value for cell_values in selected.loc[selected["model"] == finding.than, "values"] for value in cell_values]
    return sum(values) / len(values) if values else None


def check(finding: Finding, table: pd.DataFrame) -> pd.DataFrame:
    """One row per model the finding names: ``paper`` (its expectation), ``ours`` (the expectation, its opposite or
    mixed, or why there is no value), ``values`` (the model's runs in the selected cells), ``solved_runs`` (how many of
    them reach the threshold, or, comparing, lie below the reference mean) and ``agrees``
    ("yes", "no", "partly" for mixed, or None without values or without the reference model's runs)."""
    selected = table
    for key, value in finding.where.items():
        selected = selected[selected[key] == value]
    reference = reference_mean(finding, selected)
    rows = []
    for expectation, models in finding.expect.items():
        for model in models:
            cells = selected[selected["model"] == model]
            values = [value for cell_values in cells["values"] for value in cell_values]
            judged = bool(values) and (reference is not None or not finding.compares)
            solved_runs = sum(finding.counts(value, reference) for value in values) if judged else 0
            ours = (outcome(finding.counted, solved_runs, len(values)) if judged
                    else NOT_FINISHED if len(cells) and not values
                    else f"no finished run of {finding.than}" if values else NOT_IN_GRID)
            rows.append({"model": model, "paper": expectation, "ours": ours, "values": values, "solved_runs": solved_runs,
                         "agrees": agreement(expectation, ours) if judged else None})
    return pd.DataFrame(rows, columns=["model", "paper", "ours", "values", "solved_runs", "agrees"])


def outcome(counted: str, counted_runs: int, runs: int) -> str:
    return counted if counted_runs == runs else (OPPOSITES[counted] if counted_runs == 0 else "mixed")


def agreement(expectation: str, ours: str) -> str:
    return "yes" if ours == expectation else ("partly" if ours == "mixed" else "no")
