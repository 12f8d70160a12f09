"""Lightning data for language modelling: the token streams of a config's three parts from the token cache, training
micro-batches from the trainer's position, fixed validation and test sequences.

``batch_size`` is the global batch of one optimizer step (the paper's 256 or 512 sequences); the micro-batch a
process loads at a time is global / (world size x gradient accumulation), both read from the trainer when a loader
is built. Batches are ``(inputs, targets)``, both int64 (B, context_length), targets the next tokens (no position
is left unscored); with ``frequency_edges``, validation and test batches add the frequency bucket of each target,
(B, context_length) int64 (tasks.lm.token_frequency).
"""

from __future__ import annotations

import lightning
import numpy as np
from torch.utils.data import DataLoader

from tasks.evaluation_loader import evaluation_loader
from tasks.lm.config import LMTaskConfig
from tasks.lm.sequences import BucketedSequences, EvaluationSequences, TokenWindows, TrainingBatches
from tasks.lm.splits import PARTS, part_source
from tasks.lm.token_cache import cached_tokens
from tasks.lm.token_frequency import token_buckets
from tasks.lm.training_order import TrainingOrder
from tasks.training_position import micro_batch_size, training_position


def part_tokens(config: LMTaskConfig, part: str) -> np.ndarray:
    """The token stream of ``part``: all of training up to max_train_tokens; of validation and test, just enough for
    their sequences."""
    source = part_source(config, part)
    sequences = {"validation": config.val_sequences, "test": config.test_sequences}.get(part)
    max_tokens = config.max_train_tokens if sequences is None else sequences * config.context_length + 1
    tokens = cached_tokens(source.settings(), source.document_batches(), config.tokenizer, max_tokens)
    if part != "train" and len(tokens) < max_tokens:
        setting = {"validation": "val_sequences", "test": "test_sequences"}[part]
        raise ValueError(
            f"the {part} documents of corpus {config.corpus!r} (split {source.split!r}) hold "
            f"{len(tokens)} tokens, fewer than {setting}={sequences} sequences of context_length "
            f"{config.context_length} need ({max_tokens}); lower {setting}"
            + (" or raise holdout_fraction" if source.keep is not None else "")
        )
    if part == "train" and len(tokens) < config.context_length + 1:
        raise ValueError(
            f"the training documents of corpus {config.corpus!r} hold {len(tokens)} tokens, fewer than "
            f"one sequence of context_length + 1 = {config.context_length + 1}"
        )
    return tokens


class LMDataModule(lightning.LightningDataModule):
    def __init__(self, config: LMTaskConfig, batch_size: int) -> None:
        super().__init__()
        problems = config.problems()
        if batch_size < 1:
            problems.append(f"batch_size={batch_size} must be >= 1")
        if problems:
            raise ValueError("; ".join(problems))
        self.config, self.batch_size = config, batch_size
        self._tokens: dict[str, np.ndarray] = {}
        self._buckets: np.ndarray | None = None

    @property
    def spec(self):
        """The task's TaskSpec, as its config gives it."""
        return self.config.spec()

    def prepare_data(self) -> None:
        """Tokenise what the cache lacks, once per machine before the processes read it (Lightning calls this on
        one process per node)."""
        for part in PARTS:
            self.tokens(part)

    def tokens(self, part: str) -> np.ndarray:
        if part not in self._tokens:
            self._tokens[part] = part_tokens(self.config, part)
        return self._tokens[part]

    def token_buckets(self) -> np.ndarray:
        """Each token id's frequency bucket by its count in the training tokens: (vocab_size,) int64."""
        if self._buckets is None:
            self._buckets = token_buckets(
                self.tokens("train"), list(self.config.frequency_edges), self.config.vocab_size
            )
        return self._buckets

    def micro_batch(self) -> int:
        return micro_batch_size(self.batch_size, training_position(self))

    def train_dataloader(self) -> DataLoader:
        """Micro-batches from the trainer's step on (its global_step, restored before Lightning asks for this
        loader when a run resumes)."""
        position = training_position(self)
        micro_batch_size(self.batch_size, position)  # fails early when the global batch does not split
        windows = TokenWindows(self.tokens("train"), self.config.context_length)
        order = TrainingOrder(len(windows), self.batch_size, self.config.data_seed)
        return DataLoader(TrainingBatches(windows, order, position), batch_size=None)

    def val_dataloader(self) -> DataLoader:
        return self._evaluation_loader("validation", self.config.val_sequences)

    def test_dataloader(self) -> DataLoader:
        return self._evaluation_loader("test", self.config.test_sequences)

    def _evaluation_loader(self, part: str, count: int) -> DataLoader:
        windows = TokenWindows(self.tokens(part), self.config.context_length)
        sequences = EvaluationSequences(windows, count)
        if self.config.frequency_edges is not None:
            sequences = BucketedSequences(sequences, self.token_buckets())
        return evaluation_loader(self, sequences, batch_size=self.micro_batch())


def build_datamodule(config: LMTaskConfig, batch_size: int) -> LMDataModule:
    """The datamodule of a run's task config (configs/task/slimpajama.yaml, configs/task/offline_docs.yaml)."""
    return LMDataModule(config, batch_size)
