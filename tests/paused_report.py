"""`python -m tests.paused_report <ready file> <go file> <xlstm-suite report arguments>`: the report command, paused
once its figures are drawn and before its page is written (it creates the ready file, then waits for the go file):
a test's way to let another report publish in between."""

import sys
import time
from pathlib import Path

from experiments.cli import main
from experiments.reports import report


def paused(ready: Path, go: Path, render):
    def paused_render(*arguments, **keywords):
        ready.touch()
        while not go.exists():
            time.sleep(0.01)
        return render(*arguments, **keywords)

    return paused_render


if __name__ == "__main__":
    report.markdown = paused(Path(sys.argv[1]), Path(sys.argv[2]), report.markdown)
    sys.exit(main(["report", *sys.argv[3:]]))
