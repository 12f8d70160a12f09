"""SequenceTaskModule: the task's encoder -> a backbone -> the task's decoder, trained with Lightning."""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torchmetrics import MeanMetric

from experiments.training.distribution import ShardedGradientClipping
from experiments.training.optimizer import configure_adamw
from experiments.training.pooling import pair_features, pool
from tasks.spec import IGNORE_INDEX, SEQUENCE_KINDS, TaskSpec

SPLITS = ("val", "test")


class SequenceTaskModule(ShardedGradientClipping, L.LightningModule):
    """Per-position classification or regression (the spec's output_kind): tokens (B, S) or vectors (B, S, d) ->
    class logits (B, S, C) or scalars (B, S).

    Classes: positions whose target is -100 are ignored by the loss and the metrics. Accuracy is computed per sample
    over its task-relevant positions, then averaged over samples; scaled accuracy maps random guessing (the task's
    s_rand) to 0 and perfect to 1: (acc - s_rand) / (1 - s_rand).
    Scalars: positions whose target is NaN are ignored; loss and metric are the mean squared error over the scored
    positions of the whole split (``mse``, ``loss`` the same number).
    One class per sequence ("sequence_class"): the backbone's outputs are pooled over the sequence's positions
    (targets != -100; the spec's pooling, "mean" or "last") and the decoder classifies the pooled vector; a pair of
    sequences ("sequence_pair_class", inputs (B, 2, S)) pools each and classifies [x1, x2, x1 * x2, x1 - x2] with a
    two-layer head (the LRA's two-tower retrieval classifier). Accuracy is then per sequence (pair).
    """

    def __init__(
        self,
        spec: TaskSpec,
        backbone: nn.Module,
        embedding_dim: int,
        optim: dict,
        max_steps: int,
        tie_embeddings: bool = False,
    ):
        super().__init__()
        self.spec = spec
        self.optim = dict(optim)
        self.max_steps = max_steps
        if spec.input_kind == "tokens":
            self.encoder = nn.Embedding(spec.input_size, embedding_dim)
        else:
            self.encoder = nn.Linear(spec.input_size, embedding_dim)
        self.backbone = backbone
        if tie_embeddings:  # the decoder's weight is the token embedding (zoology's language models; no bias)
            if not (
                spec.input_kind == "tokens" and spec.output_kind != "scalar" and spec.num_classes == spec.input_size
            ):
                raise ValueError(
                    f"tie_embeddings needs token inputs and as many output classes as input tokens; task "
                    f"{spec.name!r} has {spec.input_kind} inputs ({spec.input_size}) and "
                    f"{spec.num_classes} {spec.output_kind} outputs"
                )
            self.decoder = nn.Linear(embedding_dim, spec.num_classes, bias=False)
            self.decoder.weight = self.encoder.weight
        elif spec.output_kind == "sequence_pair_class":
            self.decoder = nn.Sequential(
                nn.Linear(4 * embedding_dim, embedding_dim), nn.ReLU(), nn.Linear(embedding_dim, spec.num_classes)
            )
        else:
            self.decoder = nn.Linear(embedding_dim, spec.num_classes)
        self.scalar = spec.output_kind == "scalar"
        self.pooled = spec.output_kind in SEQUENCE_KINDS
        if not self.scalar:
            self.accuracy = nn.ModuleDict({split: MeanMetric() for split in SPLITS})
        self.loss = nn.ModuleDict({split: MeanMetric() for split in SPLITS})

    @property
    def monitor(self) -> tuple[str, str]:
        """The validation metric that picks a run's best checkpoint and its better direction ("max" or "min")."""
        return ("val/mse", "min") if self.scalar else ("val/scaled_accuracy", "max")

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        outputs = self.decoder(self.backbone(self.encoder(inputs)))  # (B, S, C)
        return outputs.squeeze(-1) if self.scalar else outputs  # scalars (B, S) or logits (B, S, C)

    def _loss(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        if self.scalar:
            scored = ~targets.isnan()  # (B, S)
            return F.mse_loss(outputs[scored], targets[scored])
        return F.cross_entropy(outputs.flatten(0, 1), targets.flatten(), ignore_index=IGNORE_INDEX)

    def _scored_logits(self, inputs: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Class logits (N, C) at the N scored positions only (targets != -100), and that mask (B, S): the decoder
        is not applied where nothing is scored (associative recall scores KV of L positions, of 8192 classes). The
        loss equals ``_loss(self(inputs), targets)``."""
        relevant = targets != IGNORE_INDEX  # (B, S)
        return self.decoder(self.backbone(self.encoder(inputs))[relevant]), relevant

    def _pooled_logits(self, inputs: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Class logits (B, C) of each sequence (pair) and its class (B,): targets (B, S) or pairs (B, 2, S)."""
        pairs = self.spec.output_kind == "sequence_pair_class"
        if pairs:
            inputs, targets = inputs.flatten(0, 1), targets.flatten(0, 1)  # (2B, S)
        pooled = pool(self.backbone(self.encoder(inputs)), targets != IGNORE_INDEX, self.spec.pooling)  # (N, D)
        labels = targets[:, 0]  # (N,): a sequence's first position is always its own
        if pairs:
            return self.decoder(pair_features(pooled.unflatten(0, (-1, 2)))), labels[::2]  # (B, C), (B,)
        return self.decoder(pooled), labels

    def training_step(self, batch, batch_index):
        inputs, targets = batch
        if self.pooled:
            logits, labels = self._pooled_logits(inputs, targets)  # (B, C), (B,)
            loss = F.cross_entropy(logits, labels)
        elif self.scalar:
            loss = self._loss(self(inputs), targets)
        else:
            logits, relevant = self._scored_logits(inputs, targets)  # (N, C), (B, S)
            loss = F.cross_entropy(logits, targets[relevant])
        self.log("train/loss", loss, prog_bar=True)
        return loss

    def _evaluate(self, batch, split: str) -> None:
        inputs, targets = batch
        if self.scalar:
            self.loss[split].update(self._loss(self(inputs), targets), weight=(~targets.isnan()).sum())
            return
        if self.pooled:
            logits, labels = self._pooled_logits(inputs, targets)  # (B, C), (B,)
            self.accuracy[split].update((logits.argmax(-1) == labels).float())
            self.loss[split].update(F.cross_entropy(logits, labels), weight=len(labels))
            return
        logits, relevant = self._scored_logits(inputs, targets)  # (N, C), (B, S)
        correct = torch.zeros_like(relevant)  # (B, S)
        correct[relevant] = logits.argmax(-1) == targets[relevant]
        per_sample = correct.sum(1) / relevant.sum(1).clamp_min(1)  # (B,)
        self.accuracy[split].update(per_sample[relevant.any(1)])
        self.loss[split].update(F.cross_entropy(logits, targets[relevant]), weight=relevant.sum())

    def validation_step(self, batch, batch_index):
        self._evaluate(batch, "val")

    def test_step(self, batch, batch_index):
        self._evaluate(batch, "test")

    def _log_split(self, split: str) -> None:
        if self.scalar:
            mse = self.loss[split].compute()
            self.log_dict({f"{split}/mse": mse, f"{split}/loss": mse}, prog_bar=split == "val")
            self.loss[split].reset()
            return
        accuracy = self.accuracy[split].compute()
        chance = self.spec.random_accuracy
        self.log_dict(
            {
                f"{split}/accuracy": accuracy,
                f"{split}/scaled_accuracy": (accuracy - chance) / (1 - chance),
                f"{split}/loss": self.loss[split].compute(),
            },
            prog_bar=split == "val",
        )
        self.accuracy[split].reset()
        self.loss[split].reset()

    def on_validation_epoch_end(self):
        self._log_split("val")

    def on_test_epoch_end(self):
        self._log_split("test")

    def configure_optimizers(self):
        return configure_adamw(self, self.optim, self.max_steps)
