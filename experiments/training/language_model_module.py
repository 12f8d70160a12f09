"""LanguageModelModule: next-token prediction over the whole vocabulary (a task spec of output kind "vocab")."""

import math
import warnings

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torchmetrics import MeanMetric

from experiments.training.distribution import ShardedGradientClipping
from experiments.training.optimizer import configure_adamw
from tasks.spec import IGNORE_INDEX, TaskSpec

SPLITS = ("val", "test")


class LanguageModelModule(ShardedGradientClipping, L.LightningModule):
    """A language model (tokens (B, S) -> logits (B, S, V)) trained on the next token of every scored position.

    Loss: cross-entropy averaged over the batch's scored tokens (targets != -100). Validation and test: the
    token-weighted mean cross-entropy of the whole split (``loss``, nats per token) and its exponential, the
    perplexity the paper reports (``perplexity``); every token counts once, however the split is batched. A task
    whose spec names ``token_buckets`` (e.g. the tokens' training-set frequency, Figure lstmProblems right) gives
    evaluation batches a third tensor, each target's bucket, and each bucket's perplexity is logged too
    (``perplexity/frequency/<bucket>``; a bucket without tokens in the split, or with a non-finite loss, is not
    logged).
    """

    def __init__(self, spec: TaskSpec, model: nn.Module, optim: dict, max_steps: int):
        super().__init__()
        if spec.output_kind != "vocab":
            raise ValueError(
                f"LanguageModelModule needs a task of output kind 'vocab'; {spec.name!r} has {spec.output_kind!r}"
            )
        self.spec = spec
        self.model = model
        self.optim = dict(optim)
        self.max_steps = max_steps
        # A NaN batch loss makes the split's loss NaN (a float strategy puts that value in its place): torchmetrics'
        # default drops the batch with a warning, so a diverging model would show a finite perplexity, and its
        # "disable" drops the token weights too.
        self.loss = nn.ModuleDict({split: MeanMetric(nan_strategy=math.nan) for split in SPLITS})
        self.buckets = list(spec.token_buckets or ())
        self.bucket_loss = nn.ModuleDict(
            {split: nn.ModuleList(MeanMetric(nan_strategy=math.nan) for _ in self.buckets) for split in SPLITS}
        )

    @property
    def monitor(self) -> tuple[str, str]:
        """The validation metric that picks a run's best checkpoint and its better direction."""
        return "val/perplexity", "min"

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.model(tokens)  # (B, S, V)

    def _token_losses(self, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Cross-entropy of every position (B * S,), 0 where not scored."""
        logits = self.model(inputs)  # (B, S, V)
        return F.cross_entropy(
            logits.flatten(0, 1).float(), targets.flatten(), ignore_index=IGNORE_INDEX, reduction="none"
        )

    def training_step(self, batch, batch_index):
        inputs, targets = batch  # (B, S), (B, S)
        logits = self.model(inputs)  # (B, S, V)
        loss = F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten(), ignore_index=IGNORE_INDEX)
        self.log("train/loss", loss, prog_bar=True)
        return loss

    def _evaluate(self, batch, split: str) -> None:
        inputs, targets, *buckets = batch  # (B, S) each; buckets: the targets' buckets where the task has them
        losses = self._token_losses(inputs, targets)  # (B * S,)
        scored = targets.flatten() != IGNORE_INDEX  # (B * S,)
        self.loss[split].update(losses[scored].mean(), weight=scored.sum())
        for index, metric in enumerate(self.bucket_loss[split] if buckets else ()):
            inside = scored & (buckets[0].flatten() == index)  # (B * S,)
            if inside.any():
                metric.update(losses[inside].mean(), weight=inside.sum())

    def validation_step(self, batch, batch_index):
        self._evaluate(batch, "val")

    def test_step(self, batch, batch_index):
        self._evaluate(batch, "test")

    def _log_split(self, split: str) -> None:
        loss = self.loss[split].compute()
        self.log_dict({f"{split}/loss": loss, f"{split}/perplexity": loss.exp()}, prog_bar=split == "val")
        self.loss[split].reset()
        for name, metric in zip(self.buckets, self.bucket_loss[split]):
            with warnings.catch_warnings():  # a process may have had no token of the bucket: it still joins the sum
                warnings.filterwarnings("ignore", message=".*compute.*before the.*update.*")
                bucket_loss = metric.compute()  # over every process; 0 / 0 where the split has no token in it
            if not bucket_loss.isnan():
                self.log(f"{split}/perplexity/frequency/{name}", bucket_loss.exp())
            metric.reset()

    def on_validation_epoch_end(self):
        self._log_split("val")

    def on_test_epoch_end(self):
        self._log_split("test")

    def configure_optimizers(self):
        return configure_adamw(self, self.optim, self.max_steps)
