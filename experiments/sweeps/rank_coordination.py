"""The ranks of one SLURM job learn from rank 0 what to do with its run, before any of them trains: rank 0 claims the
run (or finds it done, or held by another worker) and broadcasts the outcome; every other rank waits for it, trains
beside rank 0 only when rank 0 holds the claim, and otherwise exits at once. (Each rank deciding for itself, one that
found the run claimed elsewhere returned while the others waited for it in Lightning's rendezvous until the
distributed timeout, their GPUs held.)

The broadcast goes through a torch.distributed TCPStore that rank 0 serves on the job's first node (the first host of
SLURM_JOB_NODELIST, as submitit reads it) at a port of the job's own, PORT_BASE + the job id modulo PORT_SPAN: apart
from the ports of Lightning's rendezvous (15000 + the job id's last four digits) and below Linux's ephemeral ports
(from 32768). A job of one task has no other rank and serves nothing.
"""

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from experiments.sweeps.run_outcome import RunOutcome

DECISION_KEY = "claim-outcome"
READ_KEY = "claim-outcome-read"  # counts the ranks that have read the decision
PORT_BASE, PORT_SPAN = 25000, 7000
WAIT_SECONDS = 600.0  # how long a rank waits for rank 0's decision (rank 0 claims within seconds of starting)
LINGER_SECONDS = 60.0  # how long rank 0, not training, keeps serving until every rank has read the decision
TRAIN = "train"  # the decision of a rank 0 that holds the claim


@dataclass(frozen=True)
class JobPlace:
    """This process in its job: its rank among the job's ``world_size`` tasks, the host of rank 0, the store's port."""

    rank: int
    world_size: int
    host: str
    port: int


def job_place() -> JobPlace:
    """This process's place in its SLURM job (submitit's reading of the SLURM variables)."""
    import submitit

    environment = submitit.JobEnvironment()
    job_number = int(os.environ.get("SLURM_JOB_ID", "0"))
    return JobPlace(
        environment.global_rank, environment.num_tasks, environment.hostnames[0], PORT_BASE + job_number % PORT_SPAN
    )


class RankChannel:
    """Rank 0's decision for the job's run: ``announce`` on rank 0 (None: it holds the claim and trains; else the
    outcome of not training), ``receive`` on the others."""

    def __init__(self, place: JobPlace) -> None:
        self.place = place
        self.store = None
        self.announced: str | None = None

    def open(self) -> None:
        """Rank 0 serves the store (others connect when they receive)."""
        if self.place.world_size > 1 and self.place.rank == 0:
            self.store = self._store(is_server=True)

    def _store(self, is_server: bool):
        from torch.distributed import TCPStore

        return TCPStore(
            self.place.host,
            self.place.port,
            self.place.world_size,
            is_master=is_server,
            timeout=timedelta(seconds=WAIT_SECONDS),
            wait_for_workers=False,
        )

    def announce(self, outcome: RunOutcome | None) -> None:
        if self.store is None or self.announced is not None:
            return
        self.announced = (
            TRAIN
            if outcome is None
            else json.dumps({"status": outcome.status, "run_dir": str(outcome.run_dir), "detail": outcome.detail})
        )
        self.store.set(DECISION_KEY, self.announced)

    def receive(self) -> RunOutcome | None:
        """Rank 0's decision (waiting for it): None to train beside it, else the outcome not to."""
        store = self._store(is_server=False)
        decision = store.get(DECISION_KEY).decode()
        store.add(READ_KEY, 1)
        if decision == TRAIN:
            return None
        outcome = json.loads(decision)
        return RunOutcome(outcome["status"], Path(outcome["run_dir"]), outcome["detail"])

    def close(self) -> None:
        """Rank 0: once every other rank has read the decision (at most LINGER_SECONDS), stop serving."""
        if self.store is None:
            return
        deadline = time.monotonic() + LINGER_SECONDS
        while (
            self.announced is not None
            and self.store.add(READ_KEY, 0) < self.place.world_size - 1
            and time.monotonic() < deadline
        ):
            time.sleep(0.05)
        self.store = None


@contextmanager
def rank_channel(place: JobPlace) -> Iterator[RankChannel]:
    channel = RankChannel(place)
    channel.open()
    try:
        yield channel
    finally:
        channel.close()
