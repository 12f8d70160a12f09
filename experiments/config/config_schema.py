"""Typed, range-checked sections of a run config, checked without torch and all at once.

A section's schema is a dataclass: each field's annotation is its type (``int``, ``float``, ``bool``, ``str``,
``Literal[...]`` for choices, ``list[float]``, ``dict``, unions such as ``float | None``), a field without a
default is required, and a field's metadata bounds it: ``{"at_least": 0}``, ``{"above": 0}``, ``{"at_most": 1}``;
every number has an upper bound that a run can reach (experiments.config.bounds). A schema may define
``problems(self) -> list[str]`` for checks across its fields; it runs once every field has the right type. Task
families declare their schemas with the same plain metadata (tasks do not import experiments).

``section_problems`` returns one message per bad value: unknown keys (naming the closest valid ones), missing
keys, wrong types, values out of range, inconsistent fields.
"""

import dataclasses
import difflib
import functools
import math
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal

BOUNDS = {"at_least": ">=", "above": ">", "at_most": "<="}


def section_problems(schema: type, values: Any, prefix: str) -> list[str]:
    """Every problem of ``values`` (a plain mapping, e.g. ``OmegaConf.to_container`` of a config group) against
    the dataclass ``schema``; ``prefix`` is the section's dotted name in messages (``optim``; "" at the top)."""
    declared = field_types(schema)
    if not isinstance(values, Mapping):
        return [f"{prefix}={values!r} must be a mapping with the keys {sorted(declared)}"]
    problems = [unknown_key(prefix, key, declared) for key in values if key not in declared]
    problems += [f"{dotted(prefix, name)} is missing" for name in required_fields(schema) if name not in values]
    typed = True
    for name, value in values.items():
        if name not in declared:
            continue
        problem = value_problem(dotted(prefix, name), value, declared[name], field_metadata(schema)[name])
        if problem:
            problems.append(problem)
            typed = False
    if typed and not problems and hasattr(schema, "problems"):
        known = {name: value for name, value in values.items() if name in declared}
        problems += [f"{prefix}.{problem}" if prefix else problem for problem in schema(**known).problems()]
    return problems


def dotted(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


def unknown_key(prefix: str, key: str, declared: Mapping[str, Any]) -> str:
    closest = difflib.get_close_matches(key, declared, n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(dotted(prefix, name) for name in closest)}?" if closest else ""
    section = f"of {prefix}" if prefix else "at the top level"
    return f"unknown key {dotted(prefix, key)}{hint} (valid keys {section}: {', '.join(sorted(declared))})"


def value_problem(dotted: str, value: Any, annotation: Any, metadata: Mapping[str, Any]) -> str | None:
    """Why ``value`` is not a valid ``annotation`` within the field's bounds, or None."""
    expected = type_problem(value, annotation)
    if expected:
        return f"{dotted}={value!r} {expected}"
    for bound, operator in BOUNDS.items():
        if bound in metadata and value is not None and not within(value, bound, metadata[bound]):
            return f"{dotted}={value!r} must be {operator} {metadata[bound]}"
    return None


def within(value: Any, bound: str, limit: float) -> bool:
    """Whether the number ``value``, or every number of the list, keeps the bound; other values (a choice such as
    devices "auto") have none."""
    values = [
        item
        for item in (value if isinstance(value, list) else [value])
        if isinstance(item, (int, float)) and not isinstance(item, bool)
    ]
    if bound == "at_least":
        return all(item >= limit for item in values)
    if bound == "above":
        return all(item > limit for item in values)
    return all(item <= limit for item in values)


def type_problem(value: Any, annotation: Any) -> str | None:
    """What ``value`` must be to match ``annotation`` ("must be an integer", ...), or None if it matches."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        members = typing.get_args(annotation)
        if any(type_problem(value, member) is None for member in members):
            return None
        return "must be " + " or ".join(describe(member) for member in members)
    if origin is Literal:
        choices = list(typing.get_args(annotation))
        return (
            None
            if value in choices and type(value) in {type(c) for c in choices}
            else f"is not valid; valid choices: {choices}"
        )
    if origin is list:
        (item,) = typing.get_args(annotation)
        if isinstance(value, list) and all(type_problem(element, item) is None for element in value):
            return None
        return f"must be {describe(annotation)}"
    return None if matches(value, annotation) else f"must be {describe(annotation)}"


def matches(value: Any, kind: Any) -> bool:
    if kind is type(None):
        return value is None
    if kind is bool:
        return isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if kind is dict:
        return isinstance(value, Mapping)
    return isinstance(value, kind)


def describe(annotation: Any) -> str:
    if annotation is type(None):
        return "null"
    origin = typing.get_origin(annotation)
    if origin is Literal:
        return f"one of {list(typing.get_args(annotation))}"
    if origin is list:
        return f"a list of {describe(typing.get_args(annotation)[0]).removeprefix('a ').removeprefix('an ')}s"
    names = {int: "an integer", float: "a finite number", bool: "true or false", str: "a string", dict: "a mapping"}
    return names.get(annotation, getattr(annotation, "__name__", str(annotation)))


@functools.cache
def field_types(schema: type) -> dict[str, Any]:
    hints = typing.get_type_hints(schema)
    return {field.name: hints[field.name] for field in dataclasses.fields(schema)}


@functools.cache
def field_metadata(schema: type) -> dict[str, Mapping[str, Any]]:
    return {field.name: field.metadata for field in dataclasses.fields(schema)}


@functools.cache
def required_fields(schema: type) -> list[str]:
    return [
        field.name
        for field in dataclasses.fields(schema)
        if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING
    ]
