"""A run's training time across its attempts, on the wall clock and in CPU time: the seconds before a resume travel
in the checkpoint.

The CPU time (``time.process_time``: every thread of the training process) beside the wall time tells whether the run
had its cores to itself: a run of T intra-op threads that shared its cores with other work gets a CPU time well below
T times its wall time (one thread: a ratio of 0.6 means 40% of the wall time went to other processes), so a run time
recorded beside another sweep can be told from a quiet one in its result."""

import time

from lightning.pytorch.callbacks import Callback


class TrainingClock(Callback):
    """``seconds()`` and ``cpu_seconds()``: the run's training time so far, this attempt's since the clock was made
    plus, in an attempt that resumed from a checkpoint, the time that checkpoint recorded (the earlier attempts' time
    up to it; the steps an attempt took after its last checkpoint are lost and trained again, so they are counted
    once, when they count). ``cpu_seconds()`` is None after a resume from a checkpoint that recorded no CPU time."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.cpu_started = time.process_time()
        self.earlier_seconds, self.earlier_cpu_seconds = 0.0, 0.0
        self.checkpoint_seconds, self.checkpoint_cpu_seconds = 0.0, 0.0

    def seconds(self) -> float:
        return self.earlier_seconds + time.perf_counter() - self.started

    def cpu_seconds(self) -> float | None:
        if self.earlier_cpu_seconds is None:
            return None
        return self.earlier_cpu_seconds + time.process_time() - self.cpu_started

    def state_dict(self) -> dict[str, float | None]:
        return {"seconds": self.seconds(), "cpu_seconds": self.cpu_seconds()}

    def load_state_dict(self, state_dict: dict[str, float | None]) -> None:
        self.checkpoint_seconds = float(state_dict["seconds"])
        cpu_seconds = state_dict.get("cpu_seconds")  # absent in checkpoints written before it was recorded
        self.checkpoint_cpu_seconds = None if cpu_seconds is None else float(cpu_seconds)

    def on_train_start(self, trainer, pl_module) -> None:
        # the checkpoint fit resumed from; the best checkpoint that validate and test load later is not a resume
        self.earlier_seconds = self.checkpoint_seconds
        self.earlier_cpu_seconds = self.checkpoint_cpu_seconds
