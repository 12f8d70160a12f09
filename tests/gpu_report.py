"""The GPU suite's report: results/reports/gpu/tests.md from a ``pytest -m gpu --junitxml=FILE`` run.

    python -m tests.gpu_report FILE [FILE ...] [--output results/reports/gpu/tests.md]   (make test-gpu runs it)

Several files are the pytest runs of one session side by side (benchmarks/gpu_session.sh runs tests/gpu and the
kernels' CUDA tests in two processes at once): one report of them all.

The page holds the machine and the stack the run had (recorded by tests/gpu/conftest.py as test-suite properties:
device, driver, CUDA, torch, Triton, Python, the optional kernel packages, the suite's commit), the totals, then
passed, failed and skipped per model and per kernel backend (the tests' ``model`` and ``kernel`` properties,
set from their parameters), the other GPU tests per file, and every failure and skip with its message.
"""

import argparse
import importlib.metadata
import os
import platform
import subprocess
import xml.etree.ElementTree as ElementTree
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from experiments.atomic import write_text_atomic
from experiments.paths import REPORTS

DESTINATION = REPORTS / "gpu" / "tests.md"
PACKAGES = (
    "lightning",
    "mlstm_kernels",
    "xlstm",
    "flash-linear-attention",
    "fla-core",
    "flashrnn",
    "mamba-ssm",
    "causal-conv1d",
)
COMMIT_VARIABLE = "XLSTM_SUITE_COMMIT"  # the suite's commit where the checkout has no .git (a lent GPU's copy)
OUTCOMES = ("passed", "failed", "skipped")
GROUPS = (("model", "Per model"), ("kernel", "Per kernel backend"))


@dataclass
class TestResult:
    name: str  # the test's id: file::function[parameters]
    outcome: str  # passed, failed (a failure or an error) or skipped
    seconds: float
    message: str = ""  # the first line of the failure's or skip's message
    properties: dict[str, str] = field(default_factory=dict)


@dataclass
class SuiteRun:
    environment: dict[str, str]
    results: list[TestResult]
    seconds: float
    timestamp: str


def _first_line(text: str | None) -> str:
    return next((line.strip() for line in (text or "").splitlines() if line.strip()), "")


def read_junit(path: Path) -> SuiteRun:
    """A pytest junit XML file (any junit family): the suite's properties and every test case."""
    root = ElementTree.parse(path).getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    if suite is None:
        raise ValueError(f"{path} holds no <testsuite>: not a junit XML file of pytest")
    environment = {prop.get("name"): prop.get("value") for prop in suite.findall("./properties/property")}
    results = []
    for case in suite.iter("testcase"):
        if case.get("name") is None:  # the test under way when the run was interrupted
            continue
        outcome, message = "passed", ""
        for tag, name in (("failure", "failed"), ("error", "failed"), ("skipped", "skipped")):
            element = case.find(tag)
            if element is not None:
                outcome, message = name, _first_line(element.get("message")) or _first_line(element.text)
                break
        file = case.get("file") or case.get("classname", "").replace(".", "/") + ".py"
        properties = {prop.get("name"): prop.get("value") for prop in case.findall("./properties/property")}
        results.append(
            TestResult(f"{file}::{case.get('name')}", outcome, float(case.get("time") or 0), message, properties)
        )
    return SuiteRun(environment, results, float(suite.get("time") or 0), suite.get("timestamp", ""))


def read_junits(paths: list[Path]) -> SuiteRun:
    """The runs of ``paths``, side by side, as one: every test case, the properties of the runs that recorded them
    (the first file's where two differ), the longest run's seconds and the earliest start."""
    runs = [read_junit(path) for path in paths]
    environment: dict[str, str] = {}
    for run in reversed(runs):
        environment.update(run.environment)
    return SuiteRun(
        environment,
        [result for run in runs for result in run.results],
        max(run.seconds for run in runs),
        min((run.timestamp for run in runs if run.timestamp), default=""),
    )


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _nvidia_driver() -> str:
    try:
        query = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown (no nvidia-smi)"
    return _first_line(query.stdout) or "unknown"


def _commit(repository: Path) -> str:
    if os.environ.get(COMMIT_VARIABLE):
        return os.environ[COMMIT_VARIABLE]
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repository, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return _first_line(head.stdout) or f"unknown (set {COMMIT_VARIABLE})"


def environment(repository: Path) -> dict[str, str]:
    """The machine and stack of this process: what the report's header shows (recorded at the start of the run)."""
    import torch

    cuda = torch.cuda.is_available()
    return {
        "device": torch.cuda.get_device_name() if cuda else "none (torch sees no CUDA device)",
        "driver": _nvidia_driver() if cuda else "none",
        "cuda": str(torch.version.cuda),
        "torch": torch.__version__,
        "triton": _version("triton"),
        "python": platform.python_version(),
        "commit": _commit(repository),
        **{f"package {name}": _version(name) for name in PACKAGES},
    }


def _counts_table(title: str, key: str, groups: dict[str, list[TestResult]]) -> list[str]:
    lines = [
        f"## {title}",
        "",
        f"| {key} | passed | failed | skipped | tests not passed (first line of the message) |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    for name in sorted(groups):
        counts = Counter(result.outcome for result in groups[name])
        notes = "; ".join(
            f"`{result.name.split('::', 1)[1]}`: {result.message}".replace("|", "\\|")
            for result in groups[name]
            if result.outcome != "passed"
        )
        lines.append(f"| {name} | {counts['passed']} | {counts['failed']} | {counts['skipped']} | {notes} |")
    return lines + [""]


def report_text(run: SuiteRun) -> str:
    counts = Counter(result.outcome for result in run.results)
    environment_lines = [f"- {name}: {value}" for name, value in run.environment.items()]
    lines = [
        "# The GPU test suite on a lent GPU",
        "",
        "`pytest -m gpu` (benchmarks/gpu_session.sh; `make test-gpu`): every kernel backend against its torch "
        "reference on CUDA, every model's training through `xlstm-suite train`, step equals forward on CUDA, "
        "the kernel probe. Written by `python -m tests.gpu_report` from the run's junit XML.",
        "",
        f"Run: {run.timestamp}, {run.seconds:.0f} s; {len(run.results)} tests: "
        + ", ".join(f"{counts[outcome]} {outcome}" for outcome in OUTCOMES)
        + " (a run stopped at its time limit lists the tests it finished)",
        "",
        *(environment_lines or ["- (the run recorded no environment: not run through tests/gpu/conftest.py)"]),
        "",
    ]
    grouped_names = set()
    for key, title in GROUPS:
        groups: dict[str, list[TestResult]] = {}
        for result in run.results:
            if key in result.properties:
                groups.setdefault(result.properties[key], []).append(result)
                grouped_names.add(result.name)
        if groups:
            lines += _counts_table(title, key, groups)
    others: dict[str, list[TestResult]] = {}
    for result in run.results:
        if result.name not in grouped_names:
            others.setdefault(result.name.split("::", 1)[0], []).append(result)
    if others:
        lines += _counts_table("Other GPU tests, per file", "file", others)
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "junit", type=Path, nargs="+", help="the junit XML files of pytest -m gpu runs (of one session: one report)"
    )
    parser.add_argument("--output", type=Path, default=DESTINATION)
    arguments = parser.parse_args(argv)
    for path in arguments.junit:
        if not path.is_file():
            parser.error(f"{path} is not a file: run pytest -m gpu --junitxml={path} first")
    run = read_junits(arguments.junit)
    if "device" not in run.environment and all(result.outcome == "skipped" for result in run.results):
        files = ", ".join(str(path) for path in arguments.junit)
        print(f"{files}: every GPU test was skipped (no CUDA device?): {arguments.output} is left as it is")
        return 1
    write_text_atomic(arguments.output, report_text(run))
    print(f"wrote {arguments.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
