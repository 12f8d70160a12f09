"""The task config of an LRA Retrieval run (configs/task/lra_retrieval.yaml), checked without torch and numpy."""

from dataclasses import dataclass, field
from typing import Literal

from tasks.lra.source import GeneratedSetsFields, source_problems
from tasks.spec import TaskSpec

VOCABULARY_SIZE = 257  # padding and the 256 byte values


@dataclass
class RetrievalTaskConfig(GeneratedSetsFields):
    """Pairs of AAN documents, byte-level, each cut to ``max_length`` bytes (the LRA: 4,000), labelled 1 when they
    are linked by a citation, from ``source``, the release folder tsv_data; or generated, the stand-in of the offline
    corpus (tasks.lra.retrieval_generator: two windows of exactly ``max_length`` bytes, labelled 1 when they come from
    one document; train/val/test_samples pairs from data_seed, which also orders the training)."""

    name: Literal["lra_retrieval"]
    family: Literal["lra_retrieval"]
    source: str
    max_length: int = field(metadata={"at_least": 1, "at_most": 1_048_576})

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
        return source_problems(self.source, "tsv_data")
