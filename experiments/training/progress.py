"""A run's progress over its training steps: a tqdm bar at a terminal; in a log file (sweep workers, SLURM jobs),
a start line, one line every ``interval_seconds`` and an end line, each ``step N/max (x%) [elapsed<eta, rate] metrics``.

Lightning's own bar counts batches per epoch; our runs are step budgets over an endless data stream, so this one
counts global steps up to ``max_steps`` (from the resumed step on a restart) and shows the latest training loss and
validation scaled accuracy (a regression: validation MSE)."""

import sys
import time
from collections.abc import Callable
from typing import TextIO

from lightning.pytorch.callbacks import ProgressBar
from tqdm import tqdm

SHOWN_METRICS = {"train/loss": "loss", "val/scaled_accuracy": "val", "val/mse": "val mse"}  # logged -> short name
LOG_INTERVAL_SECONDS = 30.0


class StepProgressBar(ProgressBar):
    def __init__(
        self,
        interactive: bool | None = None,
        interval_seconds: float = LOG_INTERVAL_SECONDS,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.stream = stream or sys.stdout
        self.interactive = self.stream.isatty() if interactive is None else interactive
        self.interval_seconds = interval_seconds
        self.clock = clock
        self.enabled = True
        self.bar: tqdm | None = None
        self.started = self.last_line = 0.0
        self.first_step = 0
        self.shown: dict[str, float] = {}

    def enable(self) -> None:
        self.enabled = True

    def disable(self) -> None:
        self.enabled = False

    def on_train_start(self, trainer, pl_module) -> None:
        if not self.enabled:
            return
        self.first_step = trainer.global_step
        self.started = self.last_line = self.clock()
        if self.interactive:
            self.bar = tqdm(
                total=trainer.max_steps,
                initial=self.first_step,
                desc="train",
                unit="step",
                file=self.stream,
                dynamic_ncols=True,
                leave=True,
            )
        else:
            self.write_line(trainer.global_step, trainer.max_steps, "started")

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if not self.enabled:
            return
        self.remember(trainer)
        if self.bar is not None:
            self.bar.update(trainer.global_step - self.bar.n)
            self.bar.set_postfix(self.postfix(), refresh=False)
        elif self.clock() - self.last_line >= self.interval_seconds:
            self.write_line(trainer.global_step, trainer.max_steps)

    def on_validation_end(self, trainer, pl_module) -> None:
        if self.enabled and trainer.state.fn == "fit":  # validation inside fit; the final evaluations are not steps
            self.remember(trainer)

    def on_train_end(self, trainer, pl_module) -> None:
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.set_postfix(self.postfix())
            self.bar.close()
            self.bar = None
        else:
            self.write_line(trainer.global_step, trainer.max_steps, "finished")

    def remember(self, trainer) -> None:
        for name, short in SHOWN_METRICS.items():
            if name in trainer.progress_bar_metrics:
                self.shown[short] = float(trainer.progress_bar_metrics[name])

    def postfix(self) -> dict[str, str]:
        return {short: f"{value:.4g}" for short, value in self.shown.items()}

    def write_line(self, step: int, max_steps: int, event: str = "") -> None:
        now = self.clock()
        self.last_line = now
        # elapsed, remaining and rate count the steps of this process (a resumed run started at first_step)
        meter = tqdm.format_meter(
            step - self.first_step,
            max_steps - self.first_step,
            now - self.started,
            unit="step",
            bar_format="[{elapsed}<{remaining}, {rate_fmt}]",
        )
        metrics = " ".join(f"{short} {value}" for short, value in self.postfix().items())
        words = [f"step {step}/{max_steps} ({100 * step / max_steps:.0f}%)", meter, metrics, event]
        print(" ".join(word for word in words if word), file=self.stream, flush=True)
