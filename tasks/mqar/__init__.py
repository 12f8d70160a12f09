"""Multi-Query Associative Recall (Arora et al. 2023; the xLSTM paper's Section 4.1 and Appendix B.1.2).

`generate` draws a set of samples (numpy only, vectorised, seeded) as an `MQARSet`, whose `examples(rows)` lays out
model inputs and targets; `.data` caches the sets on disk and serves them to Lightning (`MQARDataModule`);
`MQARTaskConfig` is the torch-free schema of a task config.
"""

from tasks.mqar.config import MQARTaskConfig
from tasks.mqar.generator import MQARSet, generate

__all__ = ["MQARSet", "MQARTaskConfig", "generate"]
