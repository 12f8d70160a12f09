"""SLURM's requeue at a step boundary: when SLURM's warning before the time limit (REQUEUE_SIGNAL) has reached any
process of the run, every process learns it at the same optimizer step (an all-reduce each step: every process asks,
so no collective waits for one that is elsewhere), they save ``last.ckpt`` together and stop (Stopped for the requeue
signal); the job's rank 0 then requeues the job and the next attempt resumes from that checkpoint.

The signal's handler only notes it (experiments.stop_signals): Lightning's own (SLURMEnvironment's auto_requeue) saved
a checkpoint inside the handler, with a barrier, wherever the process was (inside backward, a collective of its
own), and hung when another process did not come. The boundaries: the end of an optimizer step after which no
validation follows (a checkpoint written before a due validation resumes without it,
experiments.training.checkpoints.validates_next), and the end of each validation within fit, where the processes
agree and stop before the next training batch: Lightning runs the checkpoint callbacks last, so only then has the
validation's last.ckpt (with its best checkpoint) been written, and it is the one to resume from.
"""

from pathlib import Path

from lightning.pytorch.callbacks import Callback
from lightning.pytorch.plugins.environments import SLURMEnvironment

from experiments.stop_signals import agree_to_requeue, stopping_for_requeue
from experiments.training.checkpoints import validates_next


class RequeueAtStepBoundary(Callback):
    """Stops the run for SLURM's requeue at the first boundary after the signal (an optimizer step's end, or a
    validation's), ``last_checkpoint`` saved first (None: a run without checkpoints, which starts again)."""

    def __init__(self, last_checkpoint: Path | None) -> None:
        self.last_checkpoint = last_checkpoint
        self.steps_seen: int | None = None
        self.stop_before_next_batch = False  # agreed at a validation's end

    def on_train_start(self, trainer, pl_module) -> None:
        self.steps_seen = trainer.global_step

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if trainer.global_step == self.steps_seen:  # within an accumulation: no optimizer step since the last one
            return
        self.steps_seen = trainer.global_step
        if not validates_next(trainer):
            self.stop_if_signalled(trainer)

    def on_validation_end(self, trainer, pl_module) -> None:
        if trainer.state.fn == "fit" and not trainer.sanity_checking:
            self.stop_before_next_batch = self.agreed(trainer)

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if self.stop_before_next_batch:  # the validation's checkpoint callbacks have written last.ckpt
            self.stop(trainer, "after its validation")

    def stop_if_signalled(self, trainer) -> None:
        """At a step boundary every process reaches: if any got the signal, all save and stop."""
        if self.agreed(trainer):
            if self.last_checkpoint is not None:
                trainer.save_checkpoint(self.last_checkpoint)  # every process: FSDP gathers its shards
            self.stop(trainer, "at the end of the step")

    @staticmethod
    def agreed(trainer) -> bool:
        return agree_to_requeue(lambda requested: trainer.strategy.reduce_boolean_decision(requested, all=False))

    def stop(self, trainer, where: str) -> None:
        print(
            f"SLURM's requeue signal: stopping at step {trainer.global_step} ({where})"
            + (f", saved in {self.last_checkpoint}" if self.last_checkpoint is not None else ""),
            flush=True,
        )
        raise stopping_for_requeue()


def requeue_callbacks(last_checkpoint: Path | None) -> list[Callback]:
    """RequeueAtStepBoundary in a SLURM task (Lightning's detection), nothing elsewhere."""
    return [RequeueAtStepBoundary(last_checkpoint)] if SLURMEnvironment.detect() else []
