"""A small SLURM for the tests, run by the executables beside this file (sbatch, srun, squeue, sacct, scontrol,
scancel): real processes, one machine, a job table in a folder.

``$FAKE_SLURM_STATE`` is the folder: ``jobs/<job>.json`` per job (an array element is ``<array>_<index>``),
``scripts/<array>.sh`` the submitted batch scripts, ``calls.log`` (each call: the caller's pid and the command line),
``hold`` (while it exists nothing starts: jobs stay PENDING).
sbatch records the script's ``#SBATCH`` options, prints ``Submitted batch job <id>`` and starts a scheduler process
for the array, which runs its elements (at most the array's ``%N`` at once) as ``bash <script>`` in a process group of
their own with SLURM's variables (SLURM_JOB_ID, SLURM_ARRAY_JOB_ID, SLURM_ARRAY_TASK_ID, SLURM_RESTART_COUNT after a
requeue, SLURM_NNODES, SLURM_NTASKS_PER_NODE, SLURM_JOB_NODELIST=localhost, ...), and records how each ended
(COMPLETED, FAILED, CANCELLED; a requeued element is PENDING again, its restart count one higher). srun starts one
process per task (nodes x tasks per node) with SLURM_PROCID, SLURM_LOCALID, SLURM_NODEID and SLURM_NTASKS, records
their pids, and with SLURM_KILL_BAD_EXIT=1 ends the others when one exits non-zero. ``scontrol requeue <job>``
(refused for a job submitted without --requeue, as on a cluster whose JobRequeue is 0) and ``scancel <job>`` send
SIGTERM to the job's processes and SIGKILL after KILL_WAIT_SECONDS; ``scancel --signal=USR1 <job>`` signals its
tasks only. squeue lists the jobs not ended, sacct every job, both as ``<job>|<state>`` with the options the suite
uses (and submitit's sacct call). Job ids start at a random number, so that tests running side by side on one
machine do not share Lightning's rendezvous ports (15000 + the job id's last four digits).
"""

import fcntl
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

STATE = Path(os.environ.get("FAKE_SLURM_STATE", "/nonexistent-fake-slurm-state"))
KILL_WAIT_SECONDS = float(os.environ.get("FAKE_SLURM_KILL_WAIT", "10"))
LIVE = ("PENDING", "RUNNING", "COMPLETING")
TICK_SECONDS = 0.05


# --- the job table ------------------------------------------------------------------------------------------------


@contextmanager
def locked():
    STATE.mkdir(parents=True, exist_ok=True)
    with open(STATE / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def job_path(job_id: str) -> Path:
    return STATE / "jobs" / f"{job_id}.json"


def read_job(job_id: str) -> dict:
    return json.loads(job_path(job_id).read_text())


def write_job(job: dict) -> None:
    path = job_path(job["id"])
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(job, indent=1))
    os.replace(temporary, path)


def update_job(job_id: str, **changes) -> dict:
    with locked():
        job = read_job(job_id) | changes
        write_job(job)
    return job


def all_jobs() -> list[dict]:
    return [json.loads(path.read_text()) for path in sorted((STATE / "jobs").glob("*.json"))]


def resolve(job_id: str) -> list[dict]:
    """The jobs an id names: an element (<array>_<index>), a whole array (<array>), or an element's own SLURM_JOB_ID."""
    return [job for job in all_jobs() if job_id in (job["id"], job["array_job"], str(job["job_number"]))]


def next_job_numbers(count: int) -> int:
    counter = STATE / "counter"
    first = int(counter.read_text()) if counter.exists() else random.randrange(100000, 900000)
    counter.write_text(str(first + count))
    return first


# --- sbatch and the scheduler -------------------------------------------------------------------------------------


def sbatch_options(script: str) -> dict[str, str]:
    options = {}
    for line in script.splitlines():
        if line.startswith("#SBATCH "):
            key, _, value = line[len("#SBATCH ") :].strip().removeprefix("--").partition("=")
            options[key] = value or "true"
    return options


def sbatch(arguments: list[str]) -> int:
    script_path = Path(arguments[-1])
    script = script_path.read_text()
    options = sbatch_options(script)
    match = re.fullmatch(r"(\d+)-(\d+)(?:%(\d+))?", options.get("array", ""))
    indices = list(range(int(match[1]), int(match[2]) + 1)) if match else [None]
    parallelism = int(match[3]) if match and match[3] else len(indices)
    with locked():
        array_job = next_job_numbers(len(indices))
        (STATE / "scripts").mkdir(exist_ok=True)
        (STATE / "scripts" / f"{array_job}.sh").write_text(script)
        for offset, index in enumerate(indices):
            write_job(
                {
                    "id": f"{array_job}_{index}" if index is not None else str(array_job),
                    "array_job": str(array_job),
                    "array_task": index,
                    "job_number": array_job + offset,
                    "state": "PENDING",
                    "restart_count": 0,
                    "options": options,
                    "parallelism": parallelism,
                    "submit_dir": os.getcwd(),
                    "batch_pgid": None,
                    "task_pids": [],
                    "exit_code": None,
                    "requeue": False,
                    "cancel": False,
                    "kill_at": None,
                }
            )
    log = open(STATE / f"scheduler-{array_job}.log", "a")
    subprocess.Popen(
        [sys.executable, __file__, "schedule", str(array_job)],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
        start_new_session=True,
        env=os.environ | {"FAKE_SLURM_STATE": str(STATE)},
    )
    print(f"Submitted batch job {array_job}")
    return 0


def job_environment(job: dict) -> dict[str, str]:
    options = job["options"]
    nodes, tasks_per_node = int(options.get("nodes", 1)), int(options.get("ntasks-per-node", 1))
    variables = {
        "SLURM_JOB_ID": str(job["job_number"]),
        "SLURM_JOBID": str(job["job_number"]),
        "SLURM_JOB_NAME": options.get("job-name", "sbatch"),
        "SLURM_NNODES": str(nodes),
        "SLURM_JOB_NUM_NODES": str(nodes),
        "SLURM_JOB_NODELIST": "localhost",
        "SLURM_NODELIST": "localhost",
        "SLURM_NTASKS_PER_NODE": str(tasks_per_node),
        "SLURM_NTASKS": str(nodes * tasks_per_node),
        "SLURM_SUBMIT_DIR": job["submit_dir"],
        "SLURM_CLUSTER_NAME": "fake",
        "FAKE_SLURM_JOB": job["id"],
    }
    if job["array_task"] is not None:
        variables |= {"SLURM_ARRAY_JOB_ID": job["array_job"], "SLURM_ARRAY_TASK_ID": str(job["array_task"])}
    if job["restart_count"]:
        variables["SLURM_RESTART_COUNT"] = str(job["restart_count"])
    return variables


def output_path(pattern: str, job: dict, task: int | None = None) -> str:
    replacements = {"%A": job["array_job"], "%a": str(job["array_task"]), "%j": str(job["job_number"])}
    if task is not None:
        replacements["%t"] = str(task)
    for key, value in replacements.items():
        pattern = pattern.replace(key, value)
    return pattern


def start(job: dict) -> subprocess.Popen:
    options = job["options"]
    script = STATE / "scripts" / f"{job['array_job']}.sh"
    output = output_path(options.get("output", str(STATE / "slurm-%j.out")), job)
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    with open(output, "a") as handle:
        process = subprocess.Popen(
            ["bash", str(script)],
            cwd=job["submit_dir"],
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=os.environ | job_environment(job),
        )
    update_job(job["id"], state="RUNNING", batch_pgid=process.pid, task_pids=[], kill_at=None)
    return process


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def schedule(array_job: str) -> int:
    """Run the array's elements; exits once every one has ended."""
    running: dict[str, subprocess.Popen] = {}
    while True:
        jobs = [job for job in all_jobs() if job["array_job"] == array_job]
        for job in jobs:
            process = running.get(job["id"])
            if process is None:
                continue
            if job["kill_at"] is not None and time.time() > job["kill_at"] and group_alive(process.pid):
                os.killpg(process.pid, signal.SIGKILL)
            if process.poll() is None or group_alive(process.pid):  # SLURM ends a job once all its processes have
                continue
            del running[job["id"]]
            if job["requeue"]:
                update_job(
                    job["id"],
                    state="PENDING",
                    requeue=False,
                    restart_count=job["restart_count"] + 1,
                    exit_code=process.returncode,
                )
            else:
                state = "CANCELLED" if job["cancel"] else "COMPLETED" if process.returncode == 0 else "FAILED"
                update_job(job["id"], state=state, exit_code=process.returncode)
        jobs = [job for job in all_jobs() if job["array_job"] == array_job]
        if not running and all(job["state"] not in LIVE for job in jobs):
            return 0
        if not (STATE / "hold").exists():
            for job in jobs:
                if job["state"] == "PENDING" and len(running) < job["parallelism"]:
                    running[job["id"]] = start(job)
        time.sleep(TICK_SECONDS)


# --- srun ---------------------------------------------------------------------------------------------------------


def srun(arguments: list[str]) -> int:
    options, command = {}, []
    words = iter(arguments)
    for word in words:
        if command or not word.startswith("-"):
            command.append(word)
        elif word in ("--output", "--error", "-o", "-e"):
            options[word.lstrip("-")[0]] = next(words)
        elif word.startswith("--kill-on-bad-exit"):
            options["k"] = word.partition("=")[2] or "1"
    job = read_job(os.environ["FAKE_SLURM_JOB"])
    nodes, tasks_per_node = int(os.environ["SLURM_NNODES"]), int(os.environ["SLURM_NTASKS_PER_NODE"])
    kill_on_bad_exit = options.get("k", os.environ.get("SLURM_KILL_BAD_EXIT", "0")) == "1"
    tasks = []
    for rank in range(nodes * tasks_per_node):
        variables = {
            "SLURM_PROCID": str(rank),
            "SLURM_LOCALID": str(rank % tasks_per_node),
            "SLURM_NODEID": str(rank // tasks_per_node),
            "SLURM_STEP_ID": "0",
            "SLURM_STEPID": "0",
            "SLURM_STEP_NUM_TASKS": str(nodes * tasks_per_node),
            "SLURM_STEP_NUM_NODES": str(nodes),
        }
        stdout = open(output_path(options.get("o", os.devnull), job, rank), "a")
        stderr = open(output_path(options["e"], job, rank), "a") if "e" in options else subprocess.STDOUT
        tasks.append(
            subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, env=os.environ | variables
            )
        )
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the tasks get SLURM's signals themselves; srun waits for them
    update_job(job["id"], task_pids=[task.pid for task in tasks])
    codes: dict[int, int] = {}
    while len(codes) < len(tasks):
        for rank, task in enumerate(tasks):
            if rank not in codes and task.poll() is not None:
                codes[rank] = task.returncode
                if kill_on_bad_exit and task.returncode != 0:
                    terminate([other.pid for other in tasks if other.poll() is None])
        time.sleep(TICK_SECONDS)
    return max((abs(code) for code in codes.values()), default=0)


def terminate(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass


# --- scontrol, scancel, squeue, sacct -----------------------------------------------------------------------------


def end_job(job: dict, **mark) -> None:
    """SIGTERM to the job's processes now, SIGKILL after KILL_WAIT_SECONDS (the scheduler sends it)."""
    update_job(job["id"], kill_at=time.time() + KILL_WAIT_SECONDS, **mark)
    if job["batch_pgid"] is not None and group_alive(job["batch_pgid"]):
        os.killpg(job["batch_pgid"], signal.SIGTERM)


def scontrol(arguments: list[str]) -> int:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a client: called from inside the job it ends, it returns first
    if arguments[:1] != ["requeue"]:
        print(f"scontrol (fake): only `scontrol requeue <job>`, not {arguments}", file=sys.stderr)
        return 2
    for job in resolve(arguments[1]):
        if job["options"].get("requeue") != "true":
            print(
                f"scontrol: error: Requeue of job {job['id']} failed: Requested operation is presently disabled",
                file=sys.stderr,
            )
            return 1
        if job["state"] == "RUNNING":
            end_job(job, requeue=True)
    return 0


def scancel(arguments: list[str]) -> int:
    signal_name = next((word.partition("=")[2] for word in arguments if word.startswith("--signal=")), None)
    for job_id in (word for word in arguments if not word.startswith("-")):
        for job in resolve(job_id):
            if signal_name is not None:
                terminate_with = getattr(signal, f"SIG{signal_name.removeprefix('SIG')}")
                for pid in job["task_pids"]:
                    try:
                        os.kill(pid, terminate_with)
                    except ProcessLookupError:
                        pass
            elif job["state"] == "PENDING":
                update_job(job["id"], state="CANCELLED")
            elif job["state"] == "RUNNING":
                end_job(job, cancel=True)
    return 0


def listed_jobs(arguments: list[str]) -> tuple[list[dict], dict[str, str]]:
    """The jobs of --jobs / -j (every job without), and the options given as --key=value or -k value."""
    options, words = {}, iter(arguments)
    for word in words:
        if word.startswith("--"):
            key, _, value = word[2:].partition("=")
            options[key] = value
        elif word in ("-j", "-o"):
            options[{"-j": "jobs", "-o": "format"}[word]] = next(words)
        elif word in ("-h", "-X", "-P", "-r"):
            options[{"-h": "noheader", "-X": "allocations", "-P": "parsable2", "-r": "array"}[word]] = ""
    if "jobs" not in options:
        return all_jobs(), options
    named = [job for job_id in options["jobs"].split(",") for job in resolve(job_id)]
    return list({job["id"]: job for job in named}.values()), options


def squeue(arguments: list[str]) -> int:
    jobs, options = listed_jobs(arguments)
    if options.get("format") != "%i|%T":
        print(f"squeue (fake): only --format=%i|%T, not {options.get('format')!r}", file=sys.stderr)
        return 2
    if "noheader" not in options:
        print("JOBID|STATE")
    for job in jobs:
        if job["state"] in LIVE:
            print(f"{job['id']}|{job['state']}")
    return 0


def sacct(arguments: list[str]) -> int:
    jobs, options = listed_jobs(arguments)
    fields = options.get("format", "JobID,State").split(",")
    values = {
        "JobID": lambda job: job["id"],
        "State": lambda job: job["state"],
        "NodeList": lambda job: "localhost",
        "ExitCode": lambda job: f"{job['exit_code'] or 0}:0",
    }
    print("|".join(fields))
    for job in jobs:
        print("|".join(values[field](job) for field in fields))
    return 0


COMMANDS = {
    "sbatch": sbatch,
    "srun": srun,
    "scontrol": scontrol,
    "scancel": scancel,
    "squeue": squeue,
    "sacct": sacct,
    "schedule": lambda arguments: schedule(arguments[0]),
}

if __name__ == "__main__":
    if sys.argv[1] != "schedule":  # every call, with the process that made it
        STATE.mkdir(parents=True, exist_ok=True)
        with open(STATE / "calls.log", "a") as calls:
            calls.write(f"{os.getppid()} {' '.join(sys.argv[1:])}\n")
    sys.exit(COMMANDS[sys.argv[1]](sys.argv[2:]))
