"""What a Hydra override does, for composing without Hydra where that gives Hydra's config: pick a config group's
option (``model=llama``), set one key to a plain value (``optim.lr=1e-3``, ``+trainer.micro_batch_size=4``), or
something else (delete a key, force-add, set a whole mapping, read another key, set Hydra's own keys, sweep, ...).

Hydra applies key overrides after the defaults list is composed, one after the other: ``key=value`` replaces the
value (``OmegaConf.update`` merges a list by replacing it), ``+key=value`` adds a key that is missing or null; a
``key=value`` whose key the config lacks is appended as ``+key=value`` (experiments.config.configuration.
with_new_keys_appended). ``set_key`` does the same to a plain container, where ``settable`` says it gives the same.
"""

import re
from dataclasses import dataclass
from typing import Any

from experiments.config.configuration import CONFIG_GROUPS
from experiments.config.plain_config import MISSING, copied, set_value, value_at

GROUP, KEY, OTHER = "group", "key", "other"
DOTTED_KEY = re.compile(r"[A-Za-z_][\w-]*(\.[A-Za-z_][\w-]*)*")  # no list index, no interpolation, no package


@dataclass(frozen=True)
class KeyOverride:
    """A ``key=value`` or ``+key=value`` override of a plain value (no mapping, no interpolation)."""

    key: str
    value: Any
    add: bool

    def settable(self, container: dict) -> bool:
        """Whether Hydra would set this value on ``container`` (rather than merge into a mapping or refuse): the
        key's path runs through mappings, and it holds no mapping (``key=``) or is missing or null (``+key=``)."""
        node = container
        for part in self.key.split(".")[:-1]:
            node = node.get(part, {})
            if not isinstance(node, dict):
                return False
        current = value_at(container, self.key)
        if self.add:
            return current is MISSING or current is None
        return not isinstance(current, dict)

    def apply(self, container: dict) -> None:
        set_value(container, self.key, copied(self.value))


def override_kinds(parsed: list) -> list[str]:
    """GROUP, KEY or OTHER per parsed override (hydra.core.override_parser.types.Override). A group choice is GROUP
    only where it is the group's one choice; a key override is KEY only where no other key override names the same
    key, a key within it or one it is within (their order would matter). Group choices pick the defaults, which
    Hydra composes before any key override, so ``model=llama`` and ``model.embedding_dim=64`` are both kept."""
    kinds = [override_kind(override) for override in parsed]
    keys = [override.key_or_group for override in parsed]
    for index, key in enumerate(keys):
        if kinds[index] == GROUP:
            clash = keys.count(key) > 1
        else:
            clash = any(
                position != index
                and kinds[position] != GROUP
                and (other == key or other.startswith(key + ".") or key.startswith(other + "."))
                for position, other in enumerate(keys)
            )
        if clash and kinds[index] != OTHER:
            kinds[index] = OTHER
    return kinds


def override_kind(override) -> str:
    key = override.key_or_group
    if override.is_delete() or override.is_force_add() or override.is_sweep_override() or override.package is not None:
        return OTHER
    if key in CONFIG_GROUPS:
        return OTHER if override.is_add() else GROUP
    if key.split(".")[0] == "hydra" or not DOTTED_KEY.fullmatch(key) or not plain(override.value()):
        return OTHER
    return KEY


def key_override(override) -> KeyOverride:
    return KeyOverride(override.key_or_group, override.value(), override.is_add())


def plain(value: Any) -> bool:
    """A scalar, or a list of plain values, with no interpolation in a string."""
    if isinstance(value, list):
        return all(plain(item) for item in value)
    if isinstance(value, str):
        return "${" not in value
    return value is None or isinstance(value, (bool, int, float))
