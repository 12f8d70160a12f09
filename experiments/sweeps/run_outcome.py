"""What became of one run in a sweep, as the sweep runner reports it (and the status display shows it)."""

import errno
from dataclasses import dataclass
from pathlib import Path

# OS errors after which no run can be written to the store: the sweep stops starting runs
STORE_WIDE_ERRORS = {errno.ENOSPC, errno.EROFS, errno.EDQUOT}


@dataclass(frozen=True)
class RunOutcome:
    """done, failed, already done, or claimed (a live worker has it); ``store_error`` when the run store could not be
    written (its OS error), which for a full or read-only filesystem stops the sweep."""

    status: str
    run_dir: Path
    detail: str = ""
    store_error: OSError | None = None

    @property
    def stops_the_sweep(self) -> bool:
        return self.store_error is not None and self.store_error.errno in STORE_WIDE_ERRORS
