"""How the model configs check themselves. Torch-free: a config is validated on construction, before torch is imported.

The style of the task configs and the run schema (experiments.config.config_schema): a field's annotation is its type
(``int``, ``float``, ``bool``, ``str``, ``Literal[...]`` for choices, ``list[int]``, unions such as ``int | None``),
its metadata bounds it (``POSITIVE``, ``{"at_least": 2}``), and the config's ``problems()`` returns one message per
inconsistency across fields. ``ModelConfig.__post_init__`` checks every field, lets the config ``resolve()`` the fields
that default to others, then asks ``problems()``; one ValueError names every bad value as ``owner.field=value`` and
what is allowed.
"""

import functools
import math
import types
import typing
from dataclasses import fields
from typing import Any, ClassVar, Literal

POSITIVE = {"above": 0}
NOT_NEGATIVE = {"at_least": 0}


class ModelConfig:
    """Base of the model config dataclasses (see the module docstring). ``owner`` is the model or part that messages
    name ("gla", "mlstm")."""

    owner: ClassVar[str]

    def __post_init__(self) -> None:
        problems = field_problems(self)
        if not problems:
            self.resolve()
            problems = self.problems()
        if problems:
            raise ValueError("\n".join(problems))

    def resolve(self) -> None:
        """Set the fields that default to others (None: derived) or arrive as plain mappings (YAML); their values are
        checked by then."""

    def problems(self) -> list[str]:
        """One message per inconsistency across fields; [] when they agree."""
        return []


def field_problems(config: ModelConfig) -> list[str]:
    """``owner.field=value`` and what it must be, for every field that does not match its annotation and bounds."""
    hints = _type_hints(type(config))
    problems = []
    for field in fields(config):
        value = getattr(config, field.name)
        problem = value_problem(value, hints[field.name], field.metadata)
        if problem:
            problems.append(f"{config.owner}.{field.name}={value!r} {problem}")
    return problems


def value_problem(value: Any, annotation: Any, bounds: typing.Mapping[str, float]) -> str | None:
    """What ``value`` must be to match ``annotation`` and ``bounds``, or None. Annotations other than numbers, strings,
    choices and lists of integers (a nested config) are the owner's to check."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        members = [member for member in typing.get_args(annotation) if member is not type(None)]
        if value is None and len(members) < len(typing.get_args(annotation)):
            return None
        (annotation,) = members
        origin = typing.get_origin(annotation)
    if origin is Literal or annotation is bool:
        choices = list(typing.get_args(annotation)) if origin is Literal else [True, False]
        valid = value in choices and type(value) in {type(choice) for choice in choices}
        return None if valid else f"is not valid; valid choices: {choices}"
    if origin is list:
        valid = isinstance(value, list) and all(_is_integer(item) for item in value)
        return None if valid else "must be a list of integers"
    if annotation is int and not _is_integer(value):
        return "must be an integer"
    if annotation is float and not (_is_number(value) and math.isfinite(value)):
        return "must be a finite number"
    if annotation is str and not isinstance(value, str):
        return "must be a string"
    if annotation in (int, float):
        return bound_problem(value, bounds)
    return None


def bound_problem(value: float, bounds: typing.Mapping[str, float]) -> str | None:
    if "above" in bounds and not value > bounds["above"]:
        return "must be positive" if bounds["above"] == 0 else f"must be above {bounds['above']}"
    if "at_least" in bounds and not value >= bounds["at_least"]:
        return f"must be at least {bounds['at_least']}"
    if "at_most" in bounds and not value <= bounds["at_most"]:
        return f"must be at most {bounds['at_most']}"
    return None


def divisible_problems(owner: str, name: str, value: int, divisor_name: str, divisor: int) -> list[str]:
    """A message unless ``divisor`` divides ``value``."""
    return [f"{owner}.{name}={value} must be divisible by {divisor_name}={divisor}"] if value % divisor else []


def _is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@functools.cache
def _type_hints(kind: type) -> dict[str, Any]:
    return typing.get_type_hints(kind)


def config_from(kind: type, owner: str, **options):
    """``kind(**options)``, naming the valid fields when an option is unknown (e.g. from a YAML override)."""
    declared = [field.name for field in fields(kind)]
    unknown = sorted(set(options) - set(declared))
    if unknown:
        raise ValueError(f"unknown {owner} option(s) {unknown}; valid choices: {declared}")
    return kind(**options)


def backbone_config(kind: type, owner: str):
    """The config function of a backbone: ``(embedding_dim=128, num_blocks=2, **options) -> kind``, validated."""

    def make(embedding_dim: int = 128, num_blocks: int = 2, **options):
        return config_from(kind, owner, embedding_dim=embedding_dim, num_blocks=num_blocks, **options)

    return make
