"""A GPU benchmark's measurement in a child process of its own, under a time limit.

A compiler can abort the whole process and a kernel can hang (Triton 3.6 on TFLA, flash-linear-attention's RWKV-6,
measured on an H200), and an out-of-memory error leaves the CUDA allocator's pool behind: each measurement runs in a
child. The child prints its result as JSON on its last stdout line; the parent gets that dictionary, or
``{"status": <why there is none>}``: the time limit (the child and every process it started are killed, so no
orphan keeps the GPU busy under the next measurement), the signal that ended it, or its exit code, each with the
child's last line of stderr.
"""

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
OK = "ok"


def last_line(text: str) -> str:
    return next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "")


def run_child(arguments: list[str], timeout_seconds: float, environment: dict[str, str] | None = None) -> dict:
    """``python <arguments>`` from the repository root, killed with its process group after ``timeout_seconds``."""
    child_environment = {
        **os.environ,
        **(environment or {}),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPOSITORY), os.environ.get("PYTHONPATH")])),
    }
    with subprocess.Popen(
        [sys.executable, *arguments],
        cwd=REPOSITORY,
        env=child_environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as child:
        try:
            stdout, stderr = child.communicate(timeout=timeout_seconds)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):  # the group may have ended meanwhile
                os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
            return {"status": f"timed out after {timeout_seconds:.0f} s"}
    error = last_line(stderr)[:300]
    if child.returncode < 0:
        name = signal.Signals(-child.returncode).name
        return {"status": f"killed by {name}" + (f": {error}" if error else "")}
    result = last_line(stdout)
    if child.returncode != 0 or not result.startswith("{"):
        return {"status": f"exit code {child.returncode}" + (f": {error}" if error else "")}
    return json.loads(result)
