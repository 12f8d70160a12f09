"""What an artifact's report shows, by kind: the ``report:`` section of its YAML, checked when the artifact loads.

Every report names its ``cells`` (the grid keys of one reported value), its ``metric`` and its ``kind``; the kind
picks the figure, and the kind's schema below places the cells in it: the paper's panels and rows of model groups
are configuration, not code.

    buckets  the metric per bucket of the scored tokens (e.g. their training-set frequency), one line per model
             (Figure lstmProblems, right)
    heatmap  rows x columns of cells, tasks grouped by their spec's group (Figure 4)
    lines    the metric against a swept size, one line per model, one panel per setting (the associative-recall figures)
    points   the mean over runs with its confidence interval, one point per model (Nearest Neighbour Search)
    scaling  the metric against the parameter count, log-log, a fitted power law per model (Figures 6 and 7)
    speed    metrics against a length or a batch size, log-log, each line's growth exponent, out-of-memory points
             marked (Figures inference_time_generation and inference_time_decoding_throughput; the perplexity and
             peak memory against the context length of Figure spaj300B_seq_extrapolation)
    table    no figure: the page's table is the report (LRA, language modelling)
"""

from dataclasses import dataclass, field

from experiments.config.config_schema import section_problems
from experiments.run_metrics import PARAMETERS_METRIC


@dataclass(frozen=True, kw_only=True)
class Report:
    """The keys of every report: ``solved_at``, a threshold of the metric that counts a run as solving its task;
    ``settings``, the config keys the page states."""

    kind: str
    cells: list[str]
    metric: str
    solved_at: float | None = None
    settings: list[str] | None = None

    def placed_by(self) -> dict[str, str | None]:
        """Layout key -> the cell key it places."""
        return {}

    def cell_metrics(self) -> list[str]:
        """Metrics besides ``metric`` that the layout reads per cell (the mean over the cell's chosen runs)."""
        return []

    def page_metrics(self) -> list[str]:
        """Cell metrics the page's cell table shows beside ``ours``."""
        return []

    def problems(self) -> list[str]:
        return [
            f"{name}={key!r} must be one of the report's cells {self.cells}"
            for name, key in self.placed_by().items()
            if key is not None and key not in self.cells
        ]


@dataclass(frozen=True, kw_only=True)
class HeatmapReport(Report):
    """``rows`` x ``columns``; columns that are tasks are grouped by their spec's group."""

    rows: str = "model"
    columns: str = "task"

    def placed_by(self) -> dict[str, str | None]:
        return {"rows": self.rows, "columns": self.columns}


@dataclass(frozen=True, kw_only=True)
class LinesReport(Report):
    """The metric against ``x`` (a numeric cell key), one line per value of ``lines``, one panel per value of
    ``panels`` (or one panel); ``rows``: a row of panels per value of a cell key (e.g. the context length), or
    row title -> the ``lines`` values drawn in that row (the paper's model groups), or one row of every line;
    ``log_x``: a logarithmic x axis (model sizes)."""

    x: str
    lines: str = "model"
    panels: str | None = None
    rows: dict | str | None = None
    log_x: bool = False

    def placed_by(self) -> dict[str, str | None]:
        return {
            "x": self.x,
            "lines": self.lines,
            "panels": self.panels,
            "rows": self.rows if isinstance(self.rows, str) else None,
        }

    def problems(self) -> list[str]:
        problems = super().problems()
        if isinstance(self.rows, dict) and not (
            self.rows and all(isinstance(values, list) and values for values in self.rows.values())
        ):
            problems.append(f"rows={self.rows!r} must map each row's title to a non-empty list of {self.lines} values")
        return problems


@dataclass(frozen=True, kw_only=True)
class PointsReport(Report):
    """One point per value of ``x`` at the mean over the cell's runs, with its ``confidence`` interval (Student's
    t over the runs), one panel per value of ``panels`` (or one panel)."""

    x: str = "model"
    panels: str | None = None
    confidence: float = field(default=0.99, metadata={"above": 0})

    def placed_by(self) -> dict[str, str | None]:
        return {"x": self.x, "panels": self.panels}

    def problems(self) -> list[str]:
        too_high = [f"confidence={self.confidence} must be < 1, e.g. 0.99"] if self.confidence >= 1 else []
        return super().problems() + too_high


@dataclass(frozen=True, kw_only=True)
class TableReport(Report):
    """The cell table on the report's page, and bars of the cells (ours beside the paper's numbers).

    ``columns``: a cell key whose values become the columns of a second, wide table (one row per value of the other
    cells, the paper's number beside ours in each column; experiments.reports.wide_table); with it,
    ``random_baseline``: a first row of each task column's guessing accuracy (its task spec's random_accuracy), and a
    value that does not beat it shown as X; ``ranking``: a Ranking column, the mean over the columns of each row's
    rank in that column.

    ``paper_columns``: more of the paper table's columns beside ours, each a column of ``paper.numbers.table`` mapped
    to the metric of ours it is compared with, e.g. ``{c4: paloma/c4, average: paloma/average}``; the page and the
    cell table get, per cell, each one's value over the chosen runs (their mean, as ``metric``'s) beside the paper's
    (experiments.reports.paper_columns). ``metric`` still selects the runs and draws the figure.

    ``detail``: ``prefix`` (the metrics of a detail table, e.g. ``paloma/domain/``), ``compare`` (a cell key, default
    model: the page counts in how many of them one value beats another) and ``note`` (text for the page, e.g. the
    paper's counts); experiments.reports.detail_table."""

    columns: str | None = None
    random_baseline: bool = False
    ranking: bool = False
    paper_columns: dict | None = None
    detail: dict | None = None

    def placed_by(self) -> dict[str, str | None]:
        return {"columns": self.columns}

    def cell_metrics(self) -> list[str]:
        return list(dict.fromkeys((self.paper_columns or {}).values()))

    def problems(self) -> list[str]:
        problems = super().problems()
        if self.detail is not None and not (
            isinstance(self.detail.get("prefix"), str)
            and set(self.detail) <= {"prefix", "compare", "note"}
            and self.detail.get("compare", "model") in self.cells
        ):
            problems.append(
                f"detail={self.detail!r} must map prefix to a metric-name prefix, and may map compare to "
                f"one of the report's cells {self.cells} and note to text"
            )
        if self.paper_columns is not None and not (
            self.paper_columns
            and all(
                isinstance(column, str) and isinstance(metric, str) for column, metric in self.paper_columns.items()
            )
        ):
            problems.append(
                f"paper_columns={self.paper_columns!r} must map each paper column (of paper.numbers.table) "
                "to the metric of ours it is compared with, e.g. {c4: paloma/c4}"
            )
        for name in ("random_baseline", "ranking"):
            if getattr(self, name) and self.columns is None:
                problems.append(f"{name}=true needs columns (the cell key whose values are the wide table's columns)")
        if self.random_baseline and self.columns not in (None, "task"):
            problems.append(
                f"random_baseline=true needs columns='task' (a task spec gives the guessing accuracy), "
                f"got columns={self.columns!r}"
            )
        return problems


@dataclass(frozen=True, kw_only=True)
class ScalingReport(Report):
    """The metric against the model's parameter count (the count each run records), both axes logarithmic: a series
    per value of ``lines``, its sizes the values of the other cells, and the power law metric = a N^b fitted to each
    series by least squares in log-log space (experiments.reports.power_laws)."""

    lines: str = "model"

    def placed_by(self) -> dict[str, str | None]:
        return {"lines": self.lines}

    def cell_metrics(self) -> list[str]:
        return [PARAMETERS_METRIC]

    def problems(self) -> list[str]:
        problems = super().problems()
        if not problems and not [key for key in self.cells if key != self.lines]:
            problems.append(f"cells={self.cells} must name a key besides lines={self.lines!r}: the sizes of a line")
        return problems


@dataclass(frozen=True, kw_only=True)
class SpeedReport(Report):
    """``metric`` and each of ``more_metrics`` in a panel of its own against ``x`` (a numeric cell key: the generated
    length, the batch size), one line per value of ``lines``, both axes logarithmic, each line labelled with its
    growth exponent k (metric ~ x^k, fitted by least squares in log-log space over the upper half of its x values:
    1 linear, 2 quadratic). ``out_of_memory``: a metric that is 1 for a run that ran out of memory; such a cell is
    drawn as an OOM mark at its x in the panel of ``metric`` (the more_metrics panels show its values). ``limits``:
    a panel's metric -> the metric holding its limit, drawn as a dashed line (the memory limit)."""

    x: str
    lines: str = "model"
    more_metrics: list[str] = field(default_factory=list)
    out_of_memory: str | None = None
    limits: dict = field(default_factory=dict)

    def placed_by(self) -> dict[str, str | None]:
        return {"x": self.x, "lines": self.lines}

    def cell_metrics(self) -> list[str]:
        return [*self.more_metrics, *([self.out_of_memory] if self.out_of_memory else []), *self.limits.values()]

    def page_metrics(self) -> list[str]:
        return self.cell_metrics()

    def problems(self) -> list[str]:
        problems = super().problems()
        return problems + [
            f"limits={self.limits!r}: key {metric!r} must be one of more_metrics {self.more_metrics} "
            f"and its value a metric name"
            for metric, limit in self.limits.items()
            if metric not in self.more_metrics or not isinstance(limit, str)
        ]


@dataclass(frozen=True, kw_only=True)
class BucketsReport(Report):
    """The metric per bucket of the scored tokens: each run records a metric per bucket, named ``prefix`` + the
    bucket's name (e.g. ``test/perplexity/frequency/1-9``, tasks.lm.token_frequency), ``buckets`` their names in the
    order drawn; one line per value of ``lines`` across the buckets, the y axis logarithmic, each line's ``metric``
    (the whole split's) in its legend."""

    prefix: str
    buckets: list[str]
    lines: str = "model"

    def placed_by(self) -> dict[str, str | None]:
        return {"lines": self.lines}

    def bucket_metrics(self) -> list[str]:
        return [f"{self.prefix}{bucket}" for bucket in self.buckets]

    def cell_metrics(self) -> list[str]:
        return self.bucket_metrics()

    def page_metrics(self) -> list[str]:
        return self.bucket_metrics()

    def problems(self) -> list[str]:
        problems = super().problems()
        if (
            not self.buckets
            or not all(isinstance(bucket, str) for bucket in self.buckets)
            or len(set(self.buckets)) < len(self.buckets)
        ):
            problems.append(
                f"buckets={self.buckets!r} must name each bucket once, as text (quote a number: '0'), "
                "in the order drawn"
            )
        return problems


REPORT_KINDS = {
    "buckets": BucketsReport,
    "heatmap": HeatmapReport,
    "lines": LinesReport,
    "points": PointsReport,
    "scaling": ScalingReport,
    "speed": SpeedReport,
    "table": TableReport,
}


def report_layout(report: dict) -> Report:
    """The typed ``report:`` section; ValueError naming every bad key or value (one per line) and the valid ones."""
    kind = report.get("kind")
    if kind not in REPORT_KINDS:
        raise ValueError(f"report.kind={kind!r} is not valid; valid choices: {sorted(REPORT_KINDS)}")
    problems = section_problems(REPORT_KINDS[kind], report, "report")
    if problems:
        raise ValueError("\n".join(problems))
    return REPORT_KINDS[kind](**report)
