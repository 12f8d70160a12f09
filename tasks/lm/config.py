"""The task config of a language-modelling run (configs/task/slimpajama.yaml, configs/task/offline_docs.yaml): typed
and bounded fields, checked without torch or numpy by experiments' config validation; the datamodule runs the same
checks before it reads anything."""

from dataclasses import dataclass, field
from typing import Literal

from tasks.lm.corpus import corpus_problems
from tasks.lm.token_frequency import bucket_labels, edges_problems
from tasks.lm.tokenizer import MODEL_VOCABULARY, TOKENIZERS
from tasks.lm.wikitext import DOCUMENT_LAYOUTS
from tasks.spec import TaskSpec


@dataclass
class LMTaskConfig:
    """Next-token prediction on a corpus: its documents tokenised, each followed by end-of-text, concatenated and
    cut into sequences of ``context_length`` + 1 tokens (inputs and their next tokens). Training reads the
    ``train_split`` (at most ``max_train_tokens`` of it) in an order drawn from ``data_seed`` (the same for every
    model and training seed); validation and test are the first ``val_sequences`` / ``test_sequences`` sequences of
    their own documents: the corpus's split named by ``validation_split`` / ``test_split``, or, where that is null,
    documents of the training split held out by a hash of their text (``holdout_fraction`` each; tasks.lm.splits)."""

    name: str
    family: Literal["lm"]
    corpus: str  # a hub id (streamed), local files, or offline:<name> (tasks.lm.corpus)
    text_field: str  # the documents' text in json and parquet records
    train_split: str
    validation_split: str | None
    test_split: str | None
    holdout_fraction: float = field(metadata={"at_least": 0, "at_most": 0.5})
    tokenizer: Literal["gpt2"]
    # the model's, at least the tokenizer's (GPT-2's 50,257 padded to 50,304)
    vocab_size: int = field(metadata={"at_least": 1, "at_most": 1_048_576})
    context_length: int = field(metadata={"at_least": 1, "at_most": 1_048_576})
    data_seed: int = field(metadata={"at_least": 0, "at_most": 4_294_967_295})
    # null: the whole training split; at most 10 trillion (the paper trains on 300 billion)
    max_train_tokens: int | None = field(metadata={"at_least": 2, "at_most": 10_000_000_000_000})
    val_sequences: int = field(metadata={"at_least": 1, "at_most": 10_000_000})
    test_sequences: int = field(metadata={"at_least": 1, "at_most": 10_000_000})
    corpus_config: str | None = None
    documents: Literal[DOCUMENT_LAYOUTS] = "records"
    # a token's count in the training tokens, so at most max_train_tokens' bound
    frequency_edges: list[int] | None = field(default=None, metadata={"at_least": 0, "at_most": 10_000_000_000_000})

    def spec(self) -> TaskSpec:
        """Accuracy of guessing: one over the tokenizer's ids (the padding ids never occur); the frequency buckets'
        names where the config has them."""
        buckets = None if self.frequency_edges is None else bucket_labels(list(self.frequency_edges))
        return TaskSpec(
            name=self.name,
            input_kind="tokens",
            input_size=self.vocab_size,
            num_classes=self.vocab_size,
            random_accuracy=1 / TOKENIZERS[self.tokenizer].vocabulary,
            group="language modelling",
            output_kind="vocab",
            token_buckets=buckets,
        )

    def corpus_split(self, part: str) -> str | None:
        """The corpus split that ``part`` (train, validation, test) reads; None where it is held out."""
        return {"train": self.train_split, "validation": self.validation_split, "test": self.test_split}[part]

    def problems(self) -> list[str]:
        problems = []
        ids = TOKENIZERS[self.tokenizer].vocabulary
        if self.vocab_size < ids:
            problems.append(
                f"vocab_size={self.vocab_size} is smaller than the {self.tokenizer} tokenizer's {ids} "
                f"ids; valid: vocab_size >= {ids} (the paper's models: {MODEL_VOCABULARY})"
            )
        if self.max_train_tokens is not None and self.max_train_tokens < self.context_length + 1:
            problems.append(
                f"max_train_tokens={self.max_train_tokens} is fewer than one sequence of context_length "
                f"+ 1 tokens; valid: max_train_tokens >= {self.context_length + 1}, or null"
            )
        held_out = [part for part in ("validation", "test") if self.corpus_split(part) is None]
        if held_out and self.holdout_fraction == 0:
            problems.append(
                f"holdout_fraction=0 holds out no documents for {' and '.join(held_out)} (their splits "
                "are null); valid: 0 < holdout_fraction <= 0.5, or name their corpus splits"
            )
        for part in ("validation", "test"):
            if self.corpus_split(part) == self.train_split:
                problems.append(
                    f"{part}_split={self.train_split!r} is the training split: it would score documents "
                    "the model trained on; name another split, or null to hold out documents"
                )
        if self.validation_split is not None and self.validation_split == self.test_split:
            problems.append(
                f"validation_split and test_split are both {self.validation_split!r}; valid: two "
                "different splits, or null to hold out documents"
            )
        if self.frequency_edges is not None:
            problems += edges_problems(list(self.frequency_edges))
        splits = [self.train_split, *(split for split in (self.validation_split, self.test_split) if split)]
        return problems + corpus_problems(self.corpus, splits, self.corpus_config)
