"""Nearest Neighbor Search (the xLSTM paper's Figure lstmProblems, left; Appendix B): find the vector nearest to a
search key in a sequence and answer its value, a regression scored by mean squared error.

`generate` draws a set of samples (numpy only, vectorised, seeded) as an `NNSSet`, whose `examples(rows)` lays out
model inputs and targets; `.data` serves the sets to Lightning (`NNSDataModule`); `NNSTaskConfig` is the torch-free
schema of a task config.
"""

from tasks.nns.config import NNSTaskConfig
from tasks.nns.generator import NNSSet, generate

__all__ = ["NNSSet", "NNSTaskConfig", "generate"]
