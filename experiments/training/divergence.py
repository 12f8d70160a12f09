"""A run whose training loss turns non-finite has diverged (the paper's NaN of Table ablstudies): it stops there and
is recorded as done, with ``train/diverged`` 1 and the step in its result (experiments.sweeps.run_store), instead of
training on NaN weights to its last step or failing and being retried by every later sweep."""

from collections.abc import Mapping

import torch
from lightning.pytorch.callbacks import Callback


class StopWhenDiverged(Callback):
    """Stops training after the first batch whose loss is not finite on any process; ``diverged_at_step``: the
    optimizer steps taken by then, that batch's step included (None while the loss stays finite)."""

    def __init__(self) -> None:
        self.diverged_at_step: int | None = None

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        loss = outputs["loss"] if isinstance(outputs, Mapping) else outputs
        non_finite = loss is not None and not bool(torch.isfinite(loss).all())
        if trainer.strategy.reduce_boolean_decision(non_finite, all=False):  # every process stops at the same step
            self.diverged_at_step = trainer.global_step
            trainer.should_stop = True
