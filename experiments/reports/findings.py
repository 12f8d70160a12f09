"""The paper's findings for an artifact (its YAML's ``paper.findings``): each quotes the paper, selects cells
(``where``, e.g. the Parity task; the value ``largest``: the largest value of its key among the cells) and names one
check of our cells, whose rule its page states:

    expect: {solved: [...], unsolved: [...]}   with ``threshold``: the metric at which a run solves its task
    expect: {below: [...], above: [...]}       with ``than``: below / above the mean of that model's runs
    order: paper                               ours in the order of the paper's numbers, pairs within each group of
                                               ``within`` (default: the task), never across groups
    rank: {models: [...], top: 2, by: key}     each model among the best ``top`` cells in each group of ``by`` (a
                                               list: the first of its keys among the cells)
    growth: {linear: [...], quadratic: [...]}  each model's growth class of ``metric`` in the layout's x
    change: {keeps: [...], rises: [...]}       each model's relative change of ``metric`` from its smallest x to its
                                               largest, within ``tolerance`` (keeps) or not (rises)
    beats: {a: b, c: [d, e], ...}              model a better than b at every x (or over each of ``metrics``); a
                                               list: better than each of them
    out_of_memory_first: [...]                 these models run out of memory at a smaller x than every other

A model may also be named by the page's name of its cell or the paper's printed row ("Pre Up-Projection Block, With
Convolution"). ``words`` maps a model to the paper's own words of it where the quote says more than the check reads.

Solved and below are judged run by run, since at small scales one seed is one draw: a model's runs meet the
expectation when all of them do, its opposite when none does, and are mixed otherwise (partly). A finding holds when
every judged model (pair, group) agrees, partly when some do, not when none does; ``not measured`` without a judged
one (experiments.reports.finding_checks does the checks).
"""

from dataclasses import dataclass, field

OPPOSITES = {"solved": "unsolved", "unsolved": "solved", "below": "above", "above": "below"}
EXPECTATIONS = tuple(OPPOSITES)
GROWTH_CLASSES = ("flat", "linear", "quadratic", "sublinear", "superlinear", "falling")
CHANGE_CLASSES = ("keeps", "rises")
FINDING_KEYS = (
    "quote",
    "source",
    "where",
    "words",
    "expect",
    "threshold",
    "than",
    "order",
    "within",
    "rank",
    "growth",
    "change",
    "tolerance",
    "metric",
    "beats",
    "metrics",
    "out_of_memory_first",
)
CHECKS = ("expect", "order", "rank", "growth", "change", "beats", "out_of_memory_first")
NOT_IN_GRID, NOT_FINISHED = "not in this scale's grid", "no finished run"
LARGEST = "largest"  # a ``where`` value: the largest value of its key among the cells


@dataclass(frozen=True)
class Finding:
    quote: str
    source: str
    where: dict = field(default_factory=dict)
    expect: dict = field(default_factory=dict)
    threshold: float | None = None
    than: str | None = None
    words: dict = field(default_factory=dict)
    order: str | None = None
    within: list | None = None
    rank: dict = field(default_factory=dict)
    growth: dict = field(default_factory=dict)
    change: dict = field(default_factory=dict)
    tolerance: float = 0.05
    metric: str | None = None
    beats: dict = field(default_factory=dict)
    metrics: list = field(default_factory=list)
    out_of_memory_first: list = field(default_factory=list)

    def __post_init__(self) -> None:
        checks = [name for name in CHECKS if getattr(self, name)]
        if len(checks) != 1:
            raise ValueError(
                f"a finding names one check of {list(CHECKS)}, got {checks or 'none'} (quote {self.quote[:40]!r}...)"
            )
        unknown = sorted(set(self.expect) - set(EXPECTATIONS))
        if unknown:
            raise ValueError(f"finding expectations {unknown} are not valid; valid choices: {list(EXPECTATIONS)}")
        if self.compares and set(self.expect) & {"solved", "unsolved"}:
            raise ValueError(
                "a finding expects solved/unsolved (with a threshold) or below/above (with than), not both"
            )
        if self.compares and self.than is None:
            raise ValueError("a finding that expects below/above needs 'than', the model whose mean they compare with")
        if self.expect and not self.compares and self.threshold is None:
            raise ValueError("a finding that expects solved/unsolved needs a 'threshold'")
        if self.order is not None and self.order != "paper":
            raise ValueError(f"order={self.order!r} is not valid; valid choices: ['paper'] (the paper's numbers)")
        if self.rank and not (
            isinstance(self.rank.get("models"), list)
            and self.rank["models"]
            and set(self.rank) <= {"models", "top", "by"}
        ):
            raise ValueError(
                f"rank={self.rank!r} needs models (a list) and may give top (default 1) and by (a cell "
                "key whose values are the groups)"
            )
        if any(
            not (isinstance(others, str) or (isinstance(others, list) and others)) for others in self.beats.values()
        ):
            raise ValueError(f"beats={self.beats!r} maps a model to a model or a non-empty list of models")
        for name, classes in (("growth", GROWTH_CLASSES), ("change", CHANGE_CLASSES)):
            bad = sorted(set(getattr(self, name)) - set(classes))
            if bad:
                raise ValueError(f"{name} classes {bad} are not valid; valid choices: {list(classes)}")

    @property
    def kind(self) -> str:
        """The check: solved, compare, order, rank, growth, change, beats or out_of_memory_first."""
        if self.expect:
            return "compare" if self.compares else "solved"
        return next(name for name in CHECKS[1:] if getattr(self, name))

    @property
    def beaten_pairs(self) -> list[tuple[str, str]]:
        """The (better, worse) pairs of ``beats``, a list value giving one pair per model in it."""
        return [
            (first, second)
            for first, others in self.beats.items()
            for second in ([others] if isinstance(others, str) else others)
        ]

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
    """The findings of an artifact's ``paper`` section; ValueError naming a key that is not one."""
    findings = []
    for item in paper.get("findings") or []:
        unknown = sorted(set(item) - set(FINDING_KEYS))
        if unknown:
            raise ValueError(f"paper.findings keys {unknown} are not valid; valid choices: {list(FINDING_KEYS)}")
        findings.append(
            Finding(
                quote=item["quote"],
                source=item["source"],
                where=dict(item.get("where") or {}),
                expect={key: list(models) for key, models in (item.get("expect") or {}).items()},
                threshold=None if item.get("threshold") is None else float(item["threshold"]),
                than=item.get("than"),
                words=dict(item.get("words") or {}),
                order=item.get("order"),
                within=item.get("within"),
                rank=dict(item.get("rank") or {}),
                growth={key: list(models) for key, models in (item.get("growth") or {}).items()},
                change={key: list(models) for key, models in (item.get("change") or {}).items()},
                tolerance=float(item.get("tolerance", 0.05)),
                metric=item.get("metric"),
                beats=dict(item.get("beats") or {}),
                metrics=list(item.get("metrics") or []),
                out_of_memory_first=list(item.get("out_of_memory_first") or []),
            )
        )
    return findings


def outcome(counted: str, counted_runs: int, runs: int) -> str:
    return counted if counted_runs == runs else (OPPOSITES[counted] if counted_runs == 0 else "mixed")


def agreement(expectation: str, ours: str) -> str:
    return "yes" if ours == expectation else ("partly" if ours == "mixed" else "no")


HOLDS, PARTLY, DOES_NOT_HOLD, NOT_MEASURED = "holds", "holds partly", "does not hold", "not measured here"


def holds_of(agrees: list) -> str:
    """A finding's verdict from its judged rows' yes / partly / no (None: not judged)."""
    judged = [agrees_one for agrees_one in agrees if agrees_one is not None]
    if not judged:
        return NOT_MEASURED
    if all(agrees_one == "yes" for agrees_one in judged):
        return HOLDS
    return PARTLY if any(agrees_one in ("yes", "partly") for agrees_one in judged) else DOES_NOT_HOLD
