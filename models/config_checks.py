"""Checks shared by the model config dataclasses. Torch-free: a config is validated before torch is imported.

Every failure is a ValueError naming the field (as ``owner.name``), the bad value and what is allowed.
"""

from dataclasses import fields


def check_positive(owner: str, name: str, value) -> None:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{owner}.{name}={value!r} must be positive")


def check_choice(owner: str, name: str, value, choices) -> None:
    if value not in choices:
        raise ValueError(f"{owner}.{name}={value!r} is not valid; valid choices: {list(choices)}")


def check_divisible(owner: str, name: str, value: int, divisor_name: str, divisor: int) -> None:
    if value % divisor:
        raise ValueError(f"{owner}.{name}={value} must be divisible by {divisor_name}={divisor}")


def config_from(kind: type, owner: str, **options):
    """``kind(**options)``, naming the valid fields when an option is unknown (e.g. from a YAML override) and
    refusing a non-integer for a field declared ``int`` (a YAML ``4.0`` would fail later, inside torch)."""
    declared = {field.name: field.type for field in fields(kind)}
    unknown = sorted(set(options) - set(declared))
    if unknown:
        raise ValueError(f"unknown {owner} option(s) {unknown}; valid choices: {list(declared)}")
    for name, value in options.items():
        optional = declared[name] in (int | None, "int | None")
        if (declared[name] in (int, "int") or optional and value is not None) and (
                not isinstance(value, int) or isinstance(value, bool)):
            raise ValueError(f"{owner}.{name}={value!r} must be an integer")
    return kind(**options)


def backbone_config(kind: type, owner: str):
    """The config function of a backbone: ``(embedding_dim=128, num_blocks=2, **options) -> kind``, validated."""

    def make(embedding_dim: int = 128, num_blocks: int = 2, **options):
        return config_from(kind, owner, embedding_dim=embedding_dim, num_blocks=num_blocks, **options)

    return make
