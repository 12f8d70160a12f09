"""Statements a report page makes about its numbers, each computed from the cells by a rule the page states: the
order of cells against the paper's (pairs compared within a group only: cells of different tasks are on different
scales), whether confidence intervals overlap, how a value grows with a swept size (its growth exponent), how a value
changes from the smallest to the largest size, and how far apart cells are beside the spread of their runs.

Each function returns the numbers behind its statement with the statement's words, so that a page never writes a
claim its numbers do not support: the words change with the numbers."""

import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import stats

# growth exponents: the class of k within this distance of 0, 1 and 2
GROWTH_TOLERANCE = 0.1
GROWTH_RULE = (
    "growth exponent k: the least-squares slope of log(value) against log(x) over the upper half of the "
    f"x values (all of them below four); flat: |k| < {GROWTH_TOLERANCE:g}; linear: |k - 1| < "
    f"{GROWTH_TOLERANCE:g}; quadratic: |k - 2| < {GROWTH_TOLERANCE:g}; sublinear or superlinear between "
    f"them; falling: k <= -{GROWTH_TOLERANCE:g}"
)
ORDER_PARTLY = 2 / 3  # the share of agreeing pairs from which an order holds partly
ORDER_RULE = (
    "a pair of cells agrees when ours and the paper's numbers put its two cells in the same order, and "
    "disagrees when they put them in opposite orders (a tie in either does neither); only cells of the same "
    "{within} are paired{across}; Kendall's tau-a = (agreeing - disagreeing) / pairs; the order holds when "
    f"every pair agrees, partly when at least {ORDER_PARTLY:.0%} do, not otherwise"
)
OVERLAP_RULE = "two intervals overlap when they share at least one value"
CHANGE_RULE = (
    "the relative change from the smallest to the largest {x}: (last - first) / first; it keeps its value "
    "when the change is below +{tolerance:.0%} (falling included), and rises otherwise"
)


def growth_exponent(x, values) -> float:
    """The slope of log(values) against log(x) over the upper half of the x values (where the term that grows fastest
    dominates); every point below four points; NaN for fewer than two distinct positive x with positive values."""
    points = pd.DataFrame({"x": np.asarray(x, dtype=float), "y": np.asarray(values, dtype=float)})
    points = points.query("x > 0 and y > 0").sort_values("x")
    upper = points[points["x"] >= points["x"].iloc[len(points) // 2]] if len(points) >= 4 else points
    if upper["x"].nunique() < 2:
        return math.nan
    slope, _ = np.polyfit(np.log(upper["x"]), np.log(upper["y"]), 1)
    return float(slope)


def growth_class(k: float) -> str:
    """flat, linear or quadratic within GROWTH_TOLERANCE of 0, 1 or 2; sublinear, superlinear or falling between
    them; "unknown" for NaN (fewer than two sizes)."""
    if math.isnan(k):
        return "unknown"
    for name, centre in (("flat", 0.0), ("linear", 1.0), ("quadratic", 2.0)):
        if abs(k - centre) < GROWTH_TOLERANCE:
            return name
    if k < 0:
        return "falling"
    if k < 1:
        return "sublinear"
    return "superlinear" if k < 2 else "faster than quadratic"


FASTER_THAN_LINEAR = {"superlinear", "quadratic", "faster than quadratic"}


def growth_agreement(expected: str, found: str) -> str:
    """yes for the same class; partly for two classes on the same side of linear growth (the paper's quadratic, our
    superlinear); no otherwise."""
    if expected == found:
        return "yes"
    if {expected, found} <= FASTER_THAN_LINEAR or {expected, found} <= {"sublinear", "flat", "falling"}:
        return "partly"
    return "no"


def signed(value: float) -> str:
    """k with its sign and no "-0.00"."""
    return f"{round(value, 2) + 0.0:+.2f}"


@dataclass(frozen=True)
class OrderAgreement:
    """Pairs of cells within the same group: ``pairs`` compared, ``agreeing`` and ``disagreeing`` (each as the
    paper's better name and its worse), per group (name -> (agreeing, pairs)), and Kendall's tau-a over them all."""

    pairs: int
    agreeing: int
    disagreeing: list[tuple[str, str]]
    groups: dict[str, tuple[int, int]]
    disagreeing_in: dict[str, list[tuple[str, str]]]

    @property
    def tau(self) -> float:
        return (self.agreeing - len(self.disagreeing)) / self.pairs if self.pairs else math.nan

    @property
    def holds(self) -> str:
        """yes (every pair agrees), partly (at least ORDER_PARTLY of them) or no; None without pairs."""
        if not self.pairs:
            return None
        if self.agreeing == self.pairs:
            return "yes"
        return "partly" if self.agreeing >= ORDER_PARTLY * self.pairs else "no"

    def sentence(self) -> str:
        per_group = "; ".join(
            f"{group}: {agreeing} of {pairs}" for group, (agreeing, pairs) in self.groups.items() if group
        )
        return (
            f"{self.agreeing} of {self.pairs} pairs are in the paper's order (Kendall's tau-a {signed(self.tau)})"
            + (f" ({per_group})" if per_group and len(self.groups) > 1 else "")
            + "."
        )


def order_agreement(
    names: list[str], groups: list[str], ours: list[float], paper: list[float], mode: str
) -> OrderAgreement:
    """Pairs of the cells (``names``, each in its group) with both values; ``mode`` min: lower is better."""
    sign = 1 if mode == "min" else -1
    rows = [row for row in zip(names, groups, ours, paper) if not (pd.isna(row[2]) or pd.isna(row[3]))]
    agreeing, disagreeing, per_group, disagreeing_in = 0, [], {}, {}
    for group in dict.fromkeys(row[1] for row in rows):
        members = [row for row in rows if row[1] == group]
        group_agreeing, disagreeing_in[group] = 0, []
        for first, second in combinations(members, 2):
            ours_order, paper_order = sign * (first[2] - second[2]), sign * (first[3] - second[3])
            if ours_order * paper_order > 0:
                group_agreeing += 1
            elif ours_order * paper_order < 0:
                better, worse = (first, second) if paper_order < 0 else (second, first)
                disagreeing.append((better[0], worse[0]))
                disagreeing_in[group].append((better[0], worse[0]))
        agreeing += group_agreeing
        per_group[group] = (group_agreeing, len(members) * (len(members) - 1) // 2)
    return OrderAgreement(
        pairs=sum(pairs for _, pairs in per_group.values()),
        agreeing=agreeing,
        disagreeing=disagreeing,
        groups=per_group,
        disagreeing_in=disagreeing_in,
    )


@dataclass(frozen=True)
class Overlaps:
    """Named intervals and which pairs of them overlap or are apart (each pair as two names, in the given order)."""

    intervals: dict[str, tuple[float, float]]
    overlapping: list[tuple[str, str]]
    apart: list[tuple[str, str]]

    def sentence(self, interval: str, digits: int) -> str:
        def shown(name: str) -> str:
            low, high = self.intervals[name]
            return f"{name} [{low:.{digits}f}, {high:.{digits}f}]"

        if not self.intervals or len(self.intervals) < 2:
            return f"Fewer than two {interval}s: nothing to compare."
        if not self.apart:
            return f"Every two of the {len(self.intervals)} {interval}s overlap."
        if not self.overlapping:
            return f"No two of the {len(self.intervals)} {interval}s overlap."
        pairs = len(self.apart) + len(self.overlapping)
        return (
            f"{len(self.apart)} of the {pairs} pairs of {interval}s {'does' if len(self.apart) == 1 else 'do'} not "
            "overlap: " + "; ".join(f"{shown(first)} and {shown(second)}" for first, second in self.apart) + "."
        )


def interval_overlaps(intervals: dict[str, tuple[float, float]]) -> Overlaps:
    """Which pairs of the intervals (name -> (low, high); NaN bounds left out) intersect."""
    known = {name: bounds for name, bounds in intervals.items() if not any(map(math.isnan, bounds))}
    overlapping, apart = [], []
    for first, second in combinations(known, 2):
        (low_1, high_1), (low_2, high_2) = known[first], known[second]
        (overlapping if max(low_1, low_2) <= min(high_1, high_2) else apart).append((first, second))
    return Overlaps(intervals=known, overlapping=overlapping, apart=apart)


@dataclass(frozen=True)
class Separation:
    """The smallest difference between two cells' means (``gap``, between ``closest``) against the widest range of
    one cell's runs (``widest``, of ``widest_cell``); ``ratio`` = gap / widest (inf when every range is 0)."""

    gap: float
    closest: tuple[str, str]
    widest: float
    widest_cell: str

    @property
    def ratio(self) -> float:
        return self.gap / self.widest if self.widest > 0 else math.inf

    def sentence(self, digits: int) -> str:
        if math.isinf(self.ratio):
            return (
                f"The smallest difference between two cells' means is {self.gap:.{digits}f} ({self.closest[0]} "
                f"and {self.closest[1]}), and every cell's runs agree exactly: every two cells differ by more "
                "than the runs of one cell spread."
            )
        who = "every two cells differ by more" if self.ratio > 1 else "the closest two cells differ by less"
        return (
            f"The smallest difference between two cells' means is {self.gap:.{digits}f} ({self.closest[0]} and "
            f"{self.closest[1]}), {self.ratio:.2f} times the widest range of one cell's runs "
            f"({self.widest:.{digits}f}, {self.widest_cell}): {who} than the runs of one cell spread."
        )


def separation(
    names: list[str], means: list[float], lows: list[float], highs: list[float], runs: list[int]
) -> Separation | None:
    """Over the cells with a mean: the closest two means and the widest range among cells of two or more runs; None
    with fewer than two means or no cell of two runs."""
    cells = [
        (name, mean, high - low, count)
        for name, mean, low, high, count in zip(names, means, lows, highs, runs)
        if not pd.isna(mean)
    ]
    ranged = [(name, width) for name, _, width, count in cells if count > 1]
    if len(cells) < 2 or not ranged:
        return None
    gap, closest = min((abs(first[1] - second[1]), (first[0], second[0])) for first, second in combinations(cells, 2))
    widest_cell, widest = max(ranged, key=lambda item: item[1])
    return Separation(gap=gap, closest=closest, widest=widest, widest_cell=widest_cell)


def relative_change(first: float, last: float) -> float:
    return (last - first) / first


def change_class(change: float, tolerance: float) -> str:
    """keeps (below +tolerance, falling included) or rises."""
    return "keeps" if change < tolerance else "rises"


def digits_for(values) -> int:
    """Decimals that show the differences between ``values``: three, more when they differ in later places (at most
    six)."""
    finite = sorted({float(value) for value in values if not pd.isna(value) and math.isfinite(value)})
    gaps = [second - first for first, second in zip(finite, finite[1:]) if second > first]
    if not gaps:
        return 3
    return int(min(6, max(3, 1 - math.floor(math.log10(min(gaps))))))


def confidence_interval(values: tuple, confidence: float) -> tuple[float, float]:
    """Student's t interval of the mean of ``values`` (NaN for fewer than two)."""
    count = len(values)
    if count < 2:
        return math.nan, math.nan
    mean = sum(values) / count
    deviation = math.sqrt(sum((value - mean) ** 2 for value in values) / (count - 1))
    half = stats.t.ppf((1 + confidence) / 2, count - 1) * deviation / math.sqrt(count)
    return mean - half, mean + half
