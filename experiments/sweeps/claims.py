"""Claims: ``claim.json`` in a run directory says which worker trains the run.

- Creating: a worker writes its holder (hostname, pid, a unique token, start time) to a private file
  and hard-links it to ``claim.json``; the link fails if the claim exists (atomic and exclusive like
  O_CREAT | O_EXCL, and a reader never sees a half-written claim).
- Holding: a heartbeat thread keeps the claim's mtime fresh; the claim is deleted once the result or
  error is written.
- Stale: its heartbeat is older than ``stale_after_seconds``, or, on this host, its pid is dead or names another
  process than the claim's (its start time differs: the pid was reused, or the claim was copied).
- Taking over: of all workers that find the same stale claim, only the one that creates its takeover
  marker (``.claim.json.taken-<token>``, exclusively) goes on: it renames the stale claim to a unique
  name, checks the token of what it moved, deletes it and creates its own claim. The others give up,
  so no late taker can move the winner's fresh claim away. Tokens, not inodes (reused at once),
  identify claims.
- Private files (drafts, moved stale claims) are named by their writer (pid, start time, hostname): a worker
  killed between creating and removing one leaves it behind, and the next claim of the run removes it once its
  writer is dead by the rule for claims.
"""

import json
import os
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

CLAIM_FILE = "claim.json"
DEFAULT_STALE_AFTER_SECONDS = 300.0


@dataclass(frozen=True)
class Claim:
    """A claim this process holds."""

    path: Path
    token: str


@dataclass(frozen=True)
class ClaimState:
    """What a reader sees of a claim: its holder (empty if unreadable) and the age of its last heartbeat."""

    holder: dict = field(default_factory=dict)
    age_seconds: float = 0.0

    @property
    def token(self) -> str | None:
        return self.holder.get("token")

    def is_stale(self, stale_after_seconds: float) -> bool:
        """A claim lives while its heartbeat does; on this host, also only while its process does: a dead pid, or a
        live pid whose start time is not the claim's (the pid was reused, or the claim was copied), ends it at once.
        A claim without a start time (not written by this suite) lives by its heartbeat alone. A claim of an earlier
        attempt of this process's own SLURM job ends when SLURM requeues the job (it runs one attempt at a time), so
        the requeued job resumes its run at once instead of waiting for the old heartbeat to age."""
        if self.age_seconds > stale_after_seconds:
            return True
        job, attempt = slurm_attempt()
        if (
            job is not None
            and self.holder.get("slurm_job") == job
            and self.holder.get("slurm_attempt", attempt) < attempt
        ):
            return True
        if self.holder.get("hostname") != socket.gethostname() or "pid" not in self.holder:
            return False
        pid = self.holder["pid"]
        if not process_is_running(pid):
            return True
        recorded, started = self.holder.get("process_start_ticks"), process_start_ticks(pid)
        return recorded is not None and started is not None and recorded != started

    def describe(self) -> str:
        return f"{self.holder.get('hostname', '?')} pid {self.holder.get('pid', '?')}"


def try_claim(
    run_dir: Path, is_finished: Callable[[], bool], stale_after_seconds: float = DEFAULT_STALE_AFTER_SECONDS
) -> Claim | None:
    """Claim the run for this process; None when ``is_finished()`` says the run is done or another worker holds or
    takes the claim. ``is_finished`` is asked before and after claiming (the previous holder may finish meanwhile)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / CLAIM_FILE
    remove_orphaned_private_files(path, stale_after_seconds)
    if is_finished():
        return None
    claim = create_claim(path)
    if claim is None:
        state = read_claim(path)
        if state is None or (state.is_stale(stale_after_seconds) and take_over(path, state, stale_after_seconds)):
            claim = create_claim(path)  # None if another worker was quicker
    if claim is not None and is_finished():  # the previous holder finished before we claimed
        release(claim)
        return None
    return claim


def create_claim(path: Path) -> Claim | None:
    """Create the complete claim file exclusively; None if it exists."""
    token = uuid.uuid4().hex
    return Claim(path, token) if create_exclusively(path, claim_holder(token)) else None


def create_exclusively(path: Path, content: dict) -> bool:
    """Write ``content`` to ``path`` unless it exists: a private draft, hard-linked into place."""
    draft = private_file(path, "draft")
    try:
        draft.write_text(json.dumps(content))
        os.link(draft, path)
    except FileExistsError:
        return False
    finally:
        draft.unlink(missing_ok=True)  # also after a failed write (a full disk)
    return True


def private_file(path: Path, kind: str) -> Path:
    """A unique file beside ``path`` that this process alone writes, named by its writer:
    ``.claim.json.<kind>-<pid>-<start ticks>-<unique hex>-<hostname>``."""
    pid = os.getpid()
    writer = f"{pid}-{process_start_ticks(pid)}-{uuid.uuid4().hex}-{socket.gethostname()}"
    return path.with_name(f".{path.name}.{kind}-{writer}")


def remove_orphaned_private_files(path: Path, stale_after_seconds: float) -> None:
    """Remove the private files of ``path`` and of its takeover markers whose writer is gone: dead or reused pid on
    this host, or, on any host, older than the staleness timeout (no live writer keeps one longer than a file write
    or a rename). Age counts from the last status change, which a rename sets: a moved claim keeps its old
    modification time."""
    for private in path.parent.glob(f"*.{path.name}*"):
        writer = private_file_writer(private)
        if writer is None:
            continue
        try:
            age_seconds = time.time() - private.stat().st_ctime
        except FileNotFoundError:  # its writer removed it meanwhile
            continue
        if ClaimState(writer, age_seconds).is_stale(stale_after_seconds):
            private.unlink(missing_ok=True)


PRIVATE_FILE_NAME = re.compile(r"\.(?:draft|stale)-(?P<pid>\d+)-(?P<ticks>\d+|None)-[0-9a-f]{32}-(?P<hostname>.+)$")


def private_file_writer(private: Path) -> dict | None:
    """The writer a private file's name records, as a claim holder; None for another file (a claim, a marker)."""
    match = PRIVATE_FILE_NAME.search(private.name)
    if match is None:
        return None
    ticks = match["ticks"]
    return {
        "hostname": match["hostname"],
        "pid": int(match["pid"]),
        "process_start_ticks": int(ticks) if ticks.isdigit() else None,
    }


def claim_holder(token: str) -> dict:
    job, attempt = slurm_attempt()
    return {
        "hostname": socket.gethostname(),
        "pid": os.getpid(),
        "process_start_ticks": process_start_ticks(os.getpid()),
        "token": token,
        "started": datetime.now(UTC).isoformat(),
    } | ({"slurm_job": job, "slurm_attempt": attempt} if job is not None else {})


def slurm_attempt() -> tuple[str | None, int]:
    """This process's SLURM job (``<array job>_<task>`` for an array job) and its attempt (SLURM_RESTART_COUNT: 0,
    then one more after each requeue); (None, 0) outside SLURM."""
    array_job = os.environ.get("SLURM_ARRAY_JOB_ID")
    job = f"{array_job}_{os.environ.get('SLURM_ARRAY_TASK_ID')}" if array_job else os.environ.get("SLURM_JOB_ID")
    return job, int(os.environ.get("SLURM_RESTART_COUNT", 0))


def read_claim(path: Path) -> ClaimState | None:
    """The claim as found now; None if there is none."""
    try:
        with open(path) as handle:
            modified = os.fstat(handle.fileno()).st_mtime
            text = handle.read()
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        holder = json.loads(text)
    except ValueError:
        holder = {}
    return ClaimState(holder, time.time() - modified)


def claim_is_live(run_dir: Path, stale_after_seconds: float = DEFAULT_STALE_AFTER_SECONDS) -> bool:
    """Whether a worker holds the run in ``run_dir`` now (its claim is there and not stale)."""
    state = read_claim(run_dir / CLAIM_FILE)
    return state is not None and not state.is_stale(stale_after_seconds)


def token_of(path: Path) -> str | None:
    state = read_claim(path)
    return state.token if state is not None else None


def take_over(path: Path, state: ClaimState, stale_after_seconds: float) -> bool:
    """Remove the stale claim if this worker is the one to take it over; False if another worker is."""
    marker = takeover_marker(path, state.token)
    if not create_exclusively(marker, claim_holder(uuid.uuid4().hex)):
        remove_abandoned_marker(marker, stale_after_seconds)
        return False
    moved = private_file(path, "stale")
    try:
        os.rename(path, moved)
    except FileNotFoundError:  # its holder released it after all
        return True
    if token_of(moved) == state.token:
        moved.unlink()
        return True
    put_back(moved, path)  # its holder released it and another worker claimed the run meanwhile
    return False


def takeover_marker(path: Path, token: str | None) -> Path:
    return path.with_name(f".{path.name}.taken-{token or 'unreadable'}")


def remove_abandoned_marker(marker: Path, stale_after_seconds: float) -> None:
    """A marker left by a taker that died mid-takeover would block the run forever; clear it once it is old."""
    state = read_claim(marker)
    if state is not None and state.age_seconds > stale_after_seconds:
        marker.unlink(missing_ok=True)


def put_back(moved: Path, path: Path) -> None:
    try:
        os.link(moved, path)
    except (FileExistsError, FileNotFoundError):  # claimed anew, or removed as orphaned after a long stall
        pass
    moved.unlink(missing_ok=True)


def refresh(claim: Claim) -> bool:
    """Touch the claim file if it is still ours; False once it is not."""
    if token_of(claim.path) != claim.token:
        return False
    try:
        os.utime(claim.path)
    except FileNotFoundError:
        return False
    return True


def release(claim: Claim) -> None:
    """Delete the claim file if it is still ours, and the takeover markers of earlier claims."""
    if token_of(claim.path) == claim.token:
        claim.path.unlink(missing_ok=True)
    for marker in claim.path.parent.glob(f".{claim.path.name}.taken-*"):
        marker.unlink(missing_ok=True)


@contextmanager
def holding(claim: Claim, heartbeat_seconds: float) -> Iterator[Claim]:
    """Keep the claim fresh with a heartbeat thread; release it on exit."""
    stop = threading.Event()
    heartbeat = threading.Thread(
        target=beat, args=(claim, heartbeat_seconds, stop), name="claim-heartbeat", daemon=True
    )
    heartbeat.start()
    try:
        yield claim
    finally:
        stop.set()
        heartbeat.join()
        release(claim)


def beat(claim: Claim, heartbeat_seconds: float, stop: threading.Event) -> None:
    while not stop.wait(heartbeat_seconds) and refresh(claim):
        pass


def heartbeat_seconds_for(stale_after_seconds: float) -> float:
    """Five heartbeats fit in the staleness timeout."""
    return stale_after_seconds / 5


def process_is_running(pid: int) -> bool:
    """Whether a process of this host runs (a zombie does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not is_zombie(pid)


def is_zombie(pid: int) -> bool:
    fields = process_stat_fields(pid)
    return fields is not None and fields[0] == "Z"


def process_start_ticks(pid: int) -> int | None:
    """When the process started, in clock ticks after boot (with the pid, it names one process); None without /proc."""
    fields = process_stat_fields(pid)
    return int(fields[19]) if fields is not None else None


def process_stat_fields(pid: int) -> list[str] | None:
    """/proc/<pid>/stat from its third field (state) on: field n of proc(5) is at index n - 3."""
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return status.rsplit(")", 1)[1].split()
