"""A scale's ``reading`` in an artifact's YAML (scales.<scale>.reading): the words a report page says about what its
numbers cannot tell."""

from dataclasses import dataclass, fields

from experiments.config.artifacts import Artifact


@dataclass(frozen=True)
class Reading:
    """A scale's ``reading``: words about what the numbers cannot tell, never a claim about them (those are computed:
    experiments.reports.statements). ``note``: a paragraph under "What this scale shows"; ``budget``: the budget that
    would show the paper's finding; ``cannot_fail``: why the findings cannot fail at this scale (a finding that no
    model learns a task, checked at a budget too small to learn it), so that holding is no test of them."""

    note: str | None = None
    budget: str | None = None
    cannot_fail: str | None = None


def reading_of(artifact: Artifact, scale: str) -> Reading:
    """The scale's ``reading``: a note, or a mapping with Reading's fields."""
    reading = artifact.scales.get(scale, {}).get("reading")
    if not isinstance(reading, dict):
        return Reading(note=reading)
    valid = sorted(field.name for field in fields(Reading))
    unknown = sorted(set(reading) - set(valid))
    if unknown:
        raise ValueError(
            f"{artifact.name}: scales.{scale}.reading keys {unknown} are not valid; valid choices: {valid}"
        )
    return Reading(**reading)
