"""The GPU suite's training runs: every model of configs/model/ through the real command (``python -m
experiments.cli train ... trainer.accelerator=gpu``), and what each run recorded.

Every model trains at bf16-mixed on a formal language; eight, one per kind of sequence mixing, also at 32-true, four
on MQAR and four on the LM sample corpus: 30 steps of 16 sequences, validation every 10 steps on a fixed set
(the formal language's at the training lengths). The models keep their configs' sizes (embedding 128, 2 blocks;
xLSTM[7:1] 8). The recipe applies per model (models.catalog.training_policy, through the command): torch.compile
where the paper compiles, and bf16-mixed as autocast with float32 weights, or for the models that do not train with
autocast (HGRN, GLA, HGRN2, RWKV-5/6) as FSDP's bfloat16 parameters (trainer.strategy=fsdp, NO_SHARD on one GPU),
since the command refuses bf16-mixed for them without FSDP.

The formal language is bucket_sort, not parity: a two-class task's loss stays near ln 2 for hundreds of steps (parity
and even_pairs on the CPU: 0.69 at steps 39 and 59), while bucket_sort's falls within 30 steps (CPU, float32: by
0.12 to 0.33 from step 9 to step 29 for Llama, xLSTM[1:0] and HGRN).
"""

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml

from experiments.paths import REPOSITORY_ROOT
from models.catalog import training_policy

MODEL_CONFIGS = REPOSITORY_ROOT / "configs" / "model"
MAX_STEPS, VALIDATION_EVERY = 30, 10
STEPS = [
    f"trainer.max_steps={MAX_STEPS}",
    f"trainer.val_every_steps={VALIDATION_EVERY}",
    "trainer.batch_size=16",
    "trainer.num_threads=2",
    "trainer.checkpoint=false",
]
TASKS = {
    "bucket_sort": ["task=bucket_sort", "task.val_samples=64", "task.test_samples=16", "task.eval_max_length=40"],
    "mqar": ["task=mqar", "task.train_samples=2048", "task.val_samples=64", "task.test_samples=16"],
    "lm_sample": ["task=lm_sample"],
}
FORMAL_LANGUAGE = "bucket_sort"
# one model per kind of sequence mixing (mLSTM, attention, selective scan, fla's GLA; sLSTM with mLSTM, WKV-4, WKV-5,
# FFT convolutions), each on one of the two tasks: the suite's time on a lent GPU
FLOAT32_RUNS = {"mqar": ("xlstm_1_0", "llama", "mamba", "gla"), "lm_sample": ("xlstm_7_1", "rwkv4", "rwkv5", "hyena")}
RUN_SECONDS = 420  # a run: start, compiles (torch.compile, Triton), kernel probes (a hung one: its time-out), 30 steps
_running: set[int] = set()  # the process groups of the runs under way (stop_all)


def model_configs() -> list[str]:
    return sorted(path.stem for path in MODEL_CONFIGS.glob("*.yaml"))


def backbone_name(model_config: str) -> str:
    """The backbone a model config builds (configs/model/mamba_tied.yaml: mamba)."""
    return yaml.safe_load((MODEL_CONFIGS / f"{model_config}.yaml").read_text())["name"]


@dataclass(frozen=True)
class TrainingRun:
    model: str  # a config of configs/model/
    task: str  # a key of TASKS
    precision: str  # bf16-mixed or 32-true

    @property
    def name(self) -> str:
        return f"{self.model}-{self.task}-{self.precision}"

    def overrides(self) -> list[str]:
        placement = ["trainer.accelerator=gpu", f"trainer.precision={self.precision}"]
        if self.precision == "bf16-mixed" and not training_policy(backbone_name(self.model)).autocast:
            placement += ["trainer.strategy=fsdp", "+trainer.fsdp_sharding=NO_SHARD"]
        return [f"model={self.model}", *TASKS[self.task], *placement, *STEPS]


def training_runs() -> list[TrainingRun]:
    return [TrainingRun(model, FORMAL_LANGUAGE, "bf16-mixed") for model in model_configs()] + [
        TrainingRun(model, task, "32-true") for task, models in FLOAT32_RUNS.items() for model in models
    ]


@dataclass
class Finished:
    run: TrainingRun
    returncode: int | None  # None: killed at the time limit
    output: str
    seconds: float
    validation_losses: list[tuple[int, float]]  # (step, val/loss) of the validations during training


def validation_losses(run_directory: Path) -> list[tuple[int, float]]:
    """The validation losses a run logged while it trained (metrics.csv; the evaluations after training left out)."""
    metrics = pd.read_csv(run_directory / "metrics.csv")
    during = metrics[(metrics["step"] < MAX_STEPS) & metrics["val/loss"].notna()]
    return [(int(step), float(loss)) for step, loss in zip(during["step"], during["val/loss"])]


def train(run: TrainingRun, root: Path, timeout_seconds: float = RUN_SECONDS) -> Finished:
    """The run's ``train`` command in a process group of its own (killed whole at the time limit), into ``root``."""
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPOSITORY_ROOT), os.environ.get("PYTHONPATH")])),
        "TORCHINDUCTOR_COMPILE_THREADS": "1",
    }  # runs train side by side: one compile worker each
    command = [sys.executable, "-m", "experiments.cli", "train", *run.overrides(), "--root", str(root)]
    started = time.monotonic()
    with subprocess.Popen(
        command,
        cwd=REPOSITORY_ROOT,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    ) as process:
        _running.add(process.pid)
        try:
            output, _ = process.communicate(timeout=timeout_seconds)
            returncode = process.returncode
        except subprocess.TimeoutExpired:
            _kill_group(process.pid)
            output, returncode = process.communicate()[0] + f"\nkilled after {timeout_seconds} s", None
        finally:
            _running.discard(process.pid)
    results = list(root.glob("adhoc/adhoc/*/result.json"))
    losses = validation_losses(results[0].parent) if returncode == 0 and results else []
    return Finished(run, returncode, output, time.monotonic() - started, losses)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:  # it ended meanwhile
        pass


def stop_all() -> None:
    """Kill every run under way with the processes it started (an interrupted suite leaves none training)."""
    for pid in list(_running):
        _kill_group(pid)
