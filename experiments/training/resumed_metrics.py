"""A resumed run's metrics.csv holds what an uninterrupted run's would: the killed attempt's rows up to the step it
resumes from, then the new attempt's. Lightning's CSV logger deletes the metrics.csv it finds when it starts."""

import csv
from pathlib import Path

from lightning.pytorch.loggers import CSVLogger

from experiments.sweeps.run_store import METRICS_FILE


def keep_rows_before(logger: CSVLogger, step: int) -> None:
    """Hand ``logger`` the rows of its existing metrics.csv that the checkpoint of optimizer step ``step`` covers,
    and write them at once (a second kill before the logger's next flush must not lose them). Lightning logs what
    optimizer step s did at step s - 1, so those are the rows logged below ``step``."""
    path = Path(logger.log_dir) / METRICS_FILE
    if not path.exists():
        return
    with open(path, newline="") as file:
        rows = [row for row in csv.DictReader(file) if row.get("step", "").isdigit() and int(row["step"]) < step]
    for row in rows:  # the values as the killed attempt wrote them, blanks left out, so the file reads the same
        logger.experiment.log_metrics(
            {name: value for name, value in row.items() if name != "step" and value != ""}, step=int(row["step"])
        )
    logger.save()
