"""The 15 formal-language tasks of the xLSTM paper (Appendix B.1.1) by registry name."""

from __future__ import annotations

from tasks.formal_languages.base import FormalLanguageTask
from tasks.formal_languages.context_free import (
    ModularArithmeticBrackets,
    ReverseString,
    SolveEquation,
    StackManipulation,
)
from tasks.formal_languages.context_sensitive import BucketSort, MissingDuplicate, OddsFirst, OrderedSet, Repetition
from tasks.formal_languages.counting import Majority, MajorityCount
from tasks.formal_languages.regular import CycleNavigation, EvenPairs, ModularArithmetic, Parity

_TASK_CLASSES = (
    CycleNavigation,
    EvenPairs,
    ModularArithmetic,
    Parity,  # regular
    ModularArithmeticBrackets,
    ReverseString,
    SolveEquation,
    StackManipulation,  # deterministic context-free
    BucketSort,
    MissingDuplicate,
    OddsFirst,
    Repetition,
    OrderedSet,  # context-sensitive
    Majority,
    MajorityCount,  # counting
)
FORMAL_LANGUAGE_TASKS: dict[str, FormalLanguageTask] = {cls.name: cls() for cls in _TASK_CLASSES}


def get_task(name: str) -> FormalLanguageTask:
    """The task registered as `name`."""
    if name not in FORMAL_LANGUAGE_TASKS:
        raise ValueError(f"unknown task {name!r}; valid choices: {sorted(FORMAL_LANGUAGE_TASKS)}")
    return FORMAL_LANGUAGE_TASKS[name]
