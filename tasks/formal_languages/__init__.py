"""Formal-language tasks of the xLSTM paper (Appendix B.1.1, after Deletang et al. 2023).

`get_task(name)` gives a task: its vocabulary (`tokens`, [PAD] = 0), `spec`, a reference solver
`answer(prompt)` on token strings and a vectorised sampler `sample(lengths, rng)` (numpy only, no torch);
`.data` turns samples into model inputs and targets (`make_examples`) and serves them to Lightning
(`FormalLanguageDataModule`).
"""

from tasks.formal_languages.base import GROUPS, FormalLanguageTask
from tasks.formal_languages.registry import FORMAL_LANGUAGE_TASKS, get_task
from tasks.spec import IGNORE_INDEX

__all__ = ["FORMAL_LANGUAGE_TASKS", "GROUPS", "IGNORE_INDEX", "FormalLanguageTask", "get_task"]
