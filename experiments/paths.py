"""Where the suite keeps the paper's numbers, the run store and the reports (the repository's results/)."""

from pathlib import Path

REPOSITORY_ROOT = Path(__file__).resolve().parents[1]
RESULTS = REPOSITORY_ROOT / "results"
PAPER_NUMBERS = RESULTS / "paper"
REPORTS = RESULTS / "reports"
