"""Run configs of a grid's cells with one Hydra compose per cell *structure*, not per cell.

A Hydra compose takes ~0.1 s, and a paper grid has hundreds of cells (Figure 4: 720) that mostly differ in plain
values such as the learning rate and the seed. Cells whose overrides agree except for such values share one
compose; each cell's values are then set on a copy, parsed by Hydra's own override parser. This gives the config
a full compose gives (a test compares them) as long as nothing else sets those keys and the config holds no
interpolation that could read them; otherwise the cell is composed on its own.
"""

import copy

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf

from experiments.config import compose_cache
from experiments.config.configuration import CONFIG_GROUPS, compose_unresolved, resolve_run_config
from experiments.config.size_presets import SIZE_KEY


class CellComposer:
    """``composer(overrides)`` -> the resolved run config, as ``configuration.compose_run_config(overrides)``."""

    def __init__(self, value_keys: list[str]):
        self.value_keys = [key for key in value_keys if key not in CONFIG_GROUPS and key != SIZE_KEY]  # sets dims
        self._parser = OverridesParser.create()
        self._parsed: dict[str, Override] = {}  # override text -> parsed (grids repeat most overrides)
        self._structures: dict[tuple[str, ...], DictConfig | None] = {}  # None: compose each cell on its own

    def __call__(self, overrides: list[str]) -> DictConfig:
        try:
            parsed = [self._parse(text) for text in overrides]
        except HydraException:
            return resolve_run_config(compose_unresolved(overrides), overrides)  # a ConfigError names the override
        keys = [override.key_or_group for override in parsed]
        shared = {index for index, override in enumerate(parsed)
                  if override.key_or_group in self.value_keys and keys.count(override.key_or_group) == 1
                  and not (override.is_add() or override.is_delete())}
        structure = tuple(text for index, text in enumerate(overrides) if index not in shared)
        if structure not in self._structures:
            config, interpolated = compose_cache.load(overrides) or self._compose(overrides)
            self._structures[structure] = None if interpolated else config
            return copy.deepcopy(config)
        base = self._structures[structure]
        if base is None:
            return resolve_run_config(compose_unresolved(overrides), overrides)
        config = copy.deepcopy(base)
        for index in shared:
            OmegaConf.update(config, parsed[index].key_or_group, parsed[index].value(), merge=False)
        return config

    def _parse(self, text: str) -> Override:
        if text not in self._parsed:
            self._parsed[text] = self._parser.parse_override(text)
        return self._parsed[text]

    @staticmethod
    def _compose(overrides: list[str]) -> tuple[DictConfig, bool]:
        """A full compose: (the resolved config, whether it had interpolations), kept in the disk cache."""
        unresolved = compose_unresolved(overrides)
        config = resolve_run_config(copy.deepcopy(unresolved), overrides)
        interpolated = OmegaConf.to_container(unresolved, resolve=False) != OmegaConf.to_container(config)
        compose_cache.store(overrides, config, interpolated)
        return config, interpolated
