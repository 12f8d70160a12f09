"""The step progress bar: a tqdm bar at a terminal, timed plain lines in a log file, over global steps."""

import io
import itertools
import re

import lightning as L
import torch

from experiments.training.progress import StepProgressBar


class TinyModule(L.LightningModule):
    """Logs what SequenceTaskModule logs on the bar: train/loss and val/scaled_accuracy."""

    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)

    def training_step(self, batch, batch_index):
        loss = self.layer(batch).pow(2).mean()
        self.log("train/loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_index):
        self.log("val/scaled_accuracy", 0.5, prog_bar=True)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        return torch.utils.data.DataLoader(torch.ones(1000, 2), batch_size=4)

    def val_dataloader(self):
        return torch.utils.data.DataLoader(torch.ones(4, 2), batch_size=4)


def fit(bar: StepProgressBar, max_steps: int = 10) -> L.Trainer:
    trainer = L.Trainer(
        max_steps=max_steps,
        val_check_interval=5,
        callbacks=[bar],
        logger=False,
        enable_checkpointing=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        accelerator="cpu",
    )
    trainer.fit(TinyModule())
    return trainer


def test_a_log_file_gets_a_start_line_a_line_per_interval_and_an_end_line():
    stream, ticks = io.StringIO(), itertools.count(step=10.0)  # every reading of the clock is 10 s later
    trainer = fit(StepProgressBar(interactive=False, interval_seconds=30, stream=stream, clock=lambda: next(ticks)))
    assert trainer.progress_bar_callback.__class__ is StepProgressBar  # Lightning's own bar is replaced
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("step 0/10 (0%)") and lines[0].endswith("started")
    assert (
        lines[-1].startswith("step 10/10 (100%)") and lines[-1].endswith("val 0.5 finished") and " loss " in lines[-1]
    )
    # the clock is read once per step and once per line written: a line at every third step (30 s after the last)
    steps = [int(line.split()[1].split("/")[0]) for line in lines[1:-1]]
    assert steps == [3, 6, 9]
    assert re.search(r"\[00:50<01:56, 16.67s/step\]", lines[1])  # elapsed < remaining, rate: 3 steps in 50 s


def test_a_terminal_gets_one_bar_over_global_steps_with_loss_and_validation():
    stream = io.StringIO()
    fit(StepProgressBar(interactive=True, stream=stream))
    final = stream.getvalue().split("\r")[-1]
    assert "train" in final and "10/10" in final and "loss=" in final and "val=0.5" in final


def test_a_disabled_bar_writes_nothing():
    stream = io.StringIO()
    bar = StepProgressBar(interactive=False, stream=stream)
    bar.disable()
    fit(bar)
    assert stream.getvalue() == ""
