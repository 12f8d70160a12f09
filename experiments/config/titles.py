"""An artifact's title with each ``{config.key}`` filled in by its values at a scale: shown by the sweep's plan and
status tables and by the report's page and figure."""

import re
from collections.abc import Sequence

from experiments.config.artifacts import Artifact, PlannedRun
from experiments.config.plain_config import value_at

PLACEHOLDER = re.compile(r"\{([\w.]+)\}")


def config_values(runs: Sequence[PlannedRun], key: str) -> list:
    """The distinct values of a config key (None where a config lacks it) over the planned runs that have a config,
    sorted."""
    distinct = {}  # by their text: a list value (frequency edges) is not hashable
    for run in runs:
        if run.container is not None:
            value = value_at(run.container, key, None)
            distinct.setdefault(repr(value), value)
    return sorted(distinct.values(), key=lambda value: (str(type(value)), value))


def summary(values: list) -> str:
    """One value as itself; numbers as "low-high" beyond three values; otherwise listed: "0.0001, 0.001, 0.01"."""
    shown = [f"{value:g}" if isinstance(value, float) else str(value) for value in values]
    numeric = all(isinstance(value, (int, float)) and not isinstance(value, bool) for value in values)
    if numeric and len(values) > 3:
        return f"{shown[0]}-{shown[-1]}"
    return ", ".join(shown) or "?"


def title_of(artifact: Artifact, runs: Sequence[PlannedRun]) -> str:
    """The artifact's title with each ``{config.key}`` replaced by its values at this scale."""
    return PLACEHOLDER.sub(lambda match: summary(config_values(runs, match.group(1))), artifact.title)
