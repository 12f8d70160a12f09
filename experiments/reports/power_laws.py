"""Power laws of a scaling report: per line (model), the metric against the parameter count N fitted as
y = a N^b (the power-law form of Kaplan et al. 2020, which the paper cites for its scaling figures) by least squares
in log-log space: log y = log a + b log N, every size weighted alike.

A size whose value or count is not a finite positive number (a diverged run's perplexity) is left out of the fit and
named in the line's note; a line with fewer than two distinct sizes left is drawn as points, without a fit."""

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from experiments.display import value_name
from experiments.run_metrics import PARAMETERS_METRIC


@dataclass(frozen=True)
class PowerLaw:
    """y = a N^b."""

    a: float
    b: float

    def __call__(self, parameters: np.ndarray) -> np.ndarray:
        return self.a * np.power(parameters, self.b)


def fittable(parameters: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Which points have a logarithm: a finite positive count and value."""
    return np.isfinite(parameters) & np.isfinite(values) & (parameters > 0) & (values > 0)


def fit_power_law(parameters, values) -> PowerLaw:
    """The least-squares line through (log N, log y); ValueError naming the points unless there are at least two
    distinct N, all finite and positive like the values."""
    parameters, values = np.asarray(parameters, dtype=float), np.asarray(values, dtype=float)
    if not fittable(parameters, values).all() or len(np.unique(parameters)) < 2:
        raise ValueError(
            f"a power law needs two or more distinct finite positive parameter counts with finite "
            f"positive values; got N={parameters.tolist()}, y={values.tolist()}"
        )
    slope, intercept = np.polyfit(np.log(parameters), np.log(values), 1)
    return PowerLaw(a=float(np.exp(intercept)), b=float(slope))


@dataclass(frozen=True)
class ScalingLine:
    """One line of a scaling figure: ``points`` (columns size, parameters, value; ascending N) are its finished sizes
    with a finite positive count and value, the ones fitted; ``left_out`` names the other finished sizes with their
    values; ``fit`` is None with fewer than two distinct counts among the points."""

    line: object
    points: pd.DataFrame
    left_out: list[str]
    fit: PowerLaw | None

    @property
    def note(self) -> str:
        notes = []
        if self.fit is None:
            notes.append(f"{len(self.points)} size{'' if len(self.points) == 1 else 's'} with a finite value: no fit")
        if self.left_out:
            notes.append(f"left out of the fit (not a finite positive value): {', '.join(self.left_out)}")
        return "; ".join(notes)


def size_name(row: pd.Series, size_keys: list[str]) -> str:
    return " ".join(value_name(key, row[key]) for key in size_keys)


def scaling_lines(table: pd.DataFrame, lines: str, cells: list[str]) -> list[ScalingLine]:
    """The lines of a cell table (columns ``ours``, ``runs`` and PARAMETERS_METRIC), one per value of ``lines`` in
    the table's order; a cell without a finished run is on no line (the page's cell table says it is missing)."""
    size_keys = [key for key in cells if key != lines]
    found = []
    for line, cells_of_line in table[table["runs"] > 0].groupby(lines, sort=False):
        parameters = cells_of_line[PARAMETERS_METRIC].to_numpy(dtype=float)
        values = cells_of_line["ours"].to_numpy(dtype=float)
        usable = fittable(parameters, values)
        names = [size_name(row, size_keys) for _, row in cells_of_line.iterrows()]
        points = pd.DataFrame({"size": names, "parameters": parameters, "value": values})[usable]
        points = points.sort_values("parameters", kind="stable").reset_index(drop=True)
        left_out = [
            f"{name} ({value:g}, N={count:g})"
            for name, value, count, kept in zip(names, values, parameters, usable)
            if not kept
        ]
        fit = fit_power_law(points["parameters"], points["value"]) if points["parameters"].nunique() >= 2 else None
        found.append(ScalingLine(line=line, points=points, left_out=left_out, fit=fit))
    return found


def short_count(count: float) -> str:
    """A parameter count as the paper names sizes: 125M, 1.3B, 6.6M, 820k."""
    for unit, scale in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if count >= scale:
            return f"{count / scale:.3g}{unit}"
    return f"{count:g}"


def formula(fit: PowerLaw) -> str:
    """``a N^b`` as matplotlib mathtext, ``a`` to three digits: ``$812\\,N^{-0.071}$``, a large or small ``a`` in powers
    of ten (``$8.6\\times10^{4}\\,N^{-0.038}$``)."""
    exponent = math.floor(math.log10(fit.a))  # a = exp(intercept) > 0
    a = f"{fit.a:.3g}" if -2 <= exponent < 4 else rf"{fit.a / 10**exponent:.3g}\times10^{{{exponent}}}"
    return rf"${a}\,N^{{{fit.b:.3f}}}$"


def power_laws_markdown(found: list[ScalingLine], lines: str, metric: str) -> str:
    """The fitted laws and the values behind them (``sizes``: the points of each line), one row per line."""
    header = f"| {lines} | sizes | parameters | {metric} | a | b | note |\n|---|---|---|---|---|---|---|"
    rows = []
    for line in found:
        fit = line.fit
        rows.append(
            " | ".join(
                [
                    f"| {value_name(lines, line.line)}",
                    str(len(line.points)),
                    ", ".join(short_count(count) for count in line.points["parameters"]),
                    ", ".join(f"{value:.3f}" for value in line.points["value"]),
                    "" if fit is None else f"{fit.a:.4g}",
                    "" if fit is None else f"{fit.b:.4f}",
                    f"{line.note} |",
                ]
            )
        )
    rule = (
        f"Fit: {metric} = a N^b, N the model's parameter count (the count each run records; embeddings and head "
        "included, as the paper's sizes are), by least squares in log-log space over the sizes of each line."
    )
    return "\n".join([header, *rows, "", rule])
