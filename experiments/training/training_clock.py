"""A run's training time across its attempts: the seconds before a resume travel in the checkpoint."""

import time

from lightning.pytorch.callbacks import Callback


class TrainingClock(Callback):
    """``seconds()``: the run's training time so far, this attempt's since the clock was made plus, in an attempt
    that resumed from a checkpoint, the time that checkpoint recorded (the earlier attempts' time up to it; the steps
    an attempt took after its last checkpoint are lost and trained again, so they are counted once, when they count)."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.earlier_seconds = 0.0
        self.checkpoint_seconds = 0.0

    def seconds(self) -> float:
        return self.earlier_seconds + time.perf_counter() - self.started

    def state_dict(self) -> dict[str, float]:
        return {"seconds": self.seconds()}

    def load_state_dict(self, state_dict: dict[str, float]) -> None:
        self.checkpoint_seconds = float(state_dict["seconds"])

    def on_train_start(self, trainer, pl_module) -> None:
        # the checkpoint fit resumed from; the best checkpoint that validate and test load later is not a resume
        self.earlier_seconds = self.checkpoint_seconds
