"""The task config of an LRA Retrieval run (configs/task/lra_retrieval.yaml), checked without torch and numpy."""

from dataclasses import dataclass, field
from typing import Literal

from tasks.lra.source import source_problems
from tasks.spec import TaskSpec

VOCABULARY_SIZE = 257  # padding and the 256 byte values


@dataclass
class RetrievalTaskConfig:
    """Pairs of AAN documents, byte-level, each cut to ``max_length`` bytes (the LRA: 4,000), labelled 1 when they
    are linked by a citation; from ``source``, the release folder tsv_data (there is no generator: the task is about
    real text). The train_samples, val_samples and test_samples of the other families do not apply."""

    name: Literal["lra_retrieval"]
    family: Literal["lra_retrieval"]
    source: str
    max_length: int = field(metadata={"at_least": 1, "at_most": 1_048_576})
    pooling: Literal["mean", "last"]
    data_seed: int = field(metadata={"at_least": 0, "at_most": 4_294_967_295})  # the training order

    def spec(self) -> TaskSpec:
        """Two classes; guessing scores 0.5 (the paper's random baseline)."""
        return TaskSpec(
            name="lra_retrieval",
            input_kind="tokens",
            input_size=VOCABULARY_SIZE,
            num_classes=2,
            random_accuracy=0.5,
            group="long range arena",
            output_kind="sequence_pair_class",
            pooling=self.pooling,
        )

    def problems(self) -> list[str]:
        return source_problems(self.source, "tsv_data", can_generate=False)
