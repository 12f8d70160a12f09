"""Run configs of a grid's cells as plain containers, with one compose per cell *structure*, not per cell.

A Hydra compose takes ~0.15 s of CPU, and the paper's grids hold 4,400 cells that mostly differ in plain values such
as the learning rate, the seed or the steps. A cell's structure is its overrides less those that set one key to a
plain value (experiments.config.override_kinds: ``optim.lr=1e-3``, ``+trainer.micro_batch_size=4``); cells of one
structure share its compose, and each cell's key overrides are applied to a copy, in order, as Hydra applies them
after composing. This gives the config a full compose gives (tests/experiments/config/test_cell_composer.py compares them) as long as
the structure's config holds no interpolation (which could read the keys: then each cell is composed on its own),
and no size preset where a key of the model is set (the preset reads the model's keys: with ``model.size`` among the
overrides, the model's keys belong to the structure). A structure's config is kept in the disk cache
(experiments.config.compose_cache).
"""

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from hydra.errors import HydraException
from omegaconf import OmegaConf

from experiments.config import compose_cache, hydra_files
from experiments.config.configuration import (
    compose_run_config,
    compose_unresolved,
    resolve_interpolations,
    with_size_preset,
)
from experiments.config.override_kinds import KEY, key_override, override_kind, override_kinds
from experiments.config.plain_config import copied, value_at
from experiments.config.size_presets import SIZE_KEY


class CellComposer:
    """``composer(overrides)`` -> the resolved run config as plain containers (a new copy each call), as
    ``OmegaConf.to_container(configuration.compose_run_config(overrides))``; a ConfigError names a bad override."""

    def __init__(self):
        self._parser = OverridesParser.create()
        self._parsed: dict[str, Override] = {}  # override text -> parsed (grids repeat most overrides)
        self._kind_alone: dict[str, str] = {}  # override text -> its kind by itself
        self._kinds: dict[tuple, list[str]] = {}  # (keys, kinds by themselves) -> kinds
        self._composed: dict[tuple[str, ...], tuple[dict, bool] | None] = {}  # overrides -> (config, interpolated)

    def __call__(self, overrides: list[str]) -> dict:
        try:
            parsed = [self._parse(text) for text in overrides]
        except HydraException:
            return OmegaConf.to_container(compose_run_config(overrides))  # raises a ConfigError naming the override
        kinds = self._override_kinds(overrides, parsed)
        sized = any(override.key_or_group == SIZE_KEY for override in parsed)
        shared = [
            index
            for index, (override, kind) in enumerate(zip(parsed, kinds))
            if kind == KEY
            and override.key_or_group != SIZE_KEY
            and not (sized and override.key_or_group.startswith("model."))
        ]
        structure = tuple(text for index, text in enumerate(overrides) if index not in shared)
        base = self._compose(structure, quiet=True)
        keys = [key_override(parsed[index]) for index in shared]
        if base is None or not self._shareable(base, keys):
            config, _ = self._compose(tuple(overrides))
            return copied(config)
        config = copied(base[0])
        for key in keys:
            key.apply(config)
        return config

    def _shareable(self, base: tuple[dict, bool], keys: list) -> bool:
        """Whether the keys set on a copy of the structure's config give its full compose."""
        config, interpolated = base
        presets_model = value_at(config, SIZE_KEY, None) is not None
        return not interpolated and all(
            key.settable(config) and not (presets_model and key.key.startswith("model.")) for key in keys
        )

    def _compose(self, overrides: tuple[str, ...], quiet: bool = False) -> tuple[dict, bool] | None:
        """(the resolved config, whether its written config had interpolations), from the disk cache, assembled or
        composed by Hydra. ``quiet``: None for overrides that do not compose (a structure; its cells' own composes
        name the problem) instead of the ConfigError."""
        if self._composed.get(overrides) is None:
            try:
                self._composed[overrides] = compose_cache.load(list(overrides)) or self._composed_now(list(overrides))
            except ValueError:
                if not quiet:
                    raise
                self._composed[overrides] = None
        return self._composed[overrides]

    def _composed_now(self, overrides: list[str]) -> tuple[dict, bool]:
        with hydra_files.files_read() as files_read:
            unresolved = compose_unresolved(overrides)
        written = OmegaConf.to_container(unresolved)
        resolve_interpolations(unresolved, overrides)
        interpolated = OmegaConf.to_container(unresolved) != written
        composed = OmegaConf.to_container(with_size_preset(unresolved, overrides)), interpolated
        compose_cache.store(overrides, *composed, files_read)
        return composed

    def _parse(self, text: str) -> Override:
        if text not in self._parsed:
            self._parsed[text] = self._parser.parse_override(text)
        return self._parsed[text]

    def _override_kinds(self, overrides: list[str], parsed: list[Override]) -> list[str]:
        for text, override in zip(overrides, parsed):
            if text not in self._kind_alone:
                self._kind_alone[text] = override_kind(override)
        key = (tuple(override.key_or_group for override in parsed), tuple(self._kind_alone[text] for text in overrides))
        if key not in self._kinds:
            self._kinds[key] = override_kinds(parsed)
        return self._kinds[key]
