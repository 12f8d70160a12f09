"""A headless Chromium (Debian's package ``chromium``) that renders a report page as a reader's browser does: its DOM
after the page loaded, and a screenshot. The results page's test reads what a reader sees through it, and the
committed screenshot beside results/reports/index.html is made with it:

    python -m experiments.reports.browser results/reports/index.html results/reports/index.png
"""

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
INSTALL_HINT = "apt-get install chromium (Debian's package; as root)"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--allow-file-access-from-files",
]
TIME_BUDGET_MS = 10_000  # virtual time for the page to load its images


def chromium() -> str | None:
    """The path of a Chromium on this machine, or None."""
    return next((path for path in map(shutil.which, CHROMIUM_NAMES) if path), None)


def run_chromium(arguments: list[str], timeout: float) -> str:
    """Chromium with FLAGS, a fresh profile and ``arguments``; its standard output. RuntimeError naming the package
    when there is none, or its own error when it fails."""
    executable = chromium()
    if executable is None:
        raise RuntimeError(f"no Chromium found ({', '.join(CHROMIUM_NAMES)}): {INSTALL_HINT}")
    with tempfile.TemporaryDirectory(prefix="xlstm-suite-chromium-") as profile:
        done = subprocess.run(
            [executable, *FLAGS, f"--user-data-dir={profile}", *arguments],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    if done.returncode != 0:
        raise RuntimeError(f"{executable} exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    return done.stdout


def rendered_dom(page: Path, timeout: float = 120) -> str:
    """The page's DOM as Chromium holds it once the page (its images included) has loaded."""
    return run_chromium([f"--virtual-time-budget={TIME_BUDGET_MS}", "--dump-dom", page.resolve().as_uri()], timeout)


def screenshot(page: Path, image: Path, width: int = 1280, height: int = 1800, timeout: float = 120) -> Path:
    """A PNG of the page's first ``height`` pixels at a window ``width`` wide."""
    image = image.resolve()
    run_chromium(
        [
            f"--virtual-time-budget={TIME_BUDGET_MS}",
            f"--window-size={width},{height}",
            f"--screenshot={image}",
            page.resolve().as_uri(),
        ],
        timeout,
    )
    return image


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python -m experiments.reports.browser <page.html> <screenshot.png>")
    print(screenshot(Path(sys.argv[1]), Path(sys.argv[2])))
