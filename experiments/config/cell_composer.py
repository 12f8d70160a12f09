"""Run configs of a grid's cells as plain containers, with one compose per cell *structure*, not per cell.

A Hydra compose takes ~0.15 s of CPU, and the paper's grids hold 4,400 cells that mostly differ in plain values such
as the learning rate, the seed or the steps. A cell's structure is its overrides less those that set one key to a
plain value (experiments.config.override_kinds: ``optim.lr=1e-3``, ``+trainer.micro_batch_size=4``); cells of one
structure share its compose, and each cell's key overrides are applied to a copy, in order, as Hydra applies them
after composing. This gives the config a full compose gives (tests/experiments/config/test_cell_composer.py compares them) as long as
the structure's config holds no interpolation (which could read the keys: then each cell is composed on its own),
and no size preset where a key of the model is set (the preset reads the model's keys: with ``model.size`` among the
overrides, the model's keys belong to the structure). A structure's config is kept in the disk cache
(experiments.config.compose_cache). ``prefetch`` composes a grid's uncached structures in child processes, one per
CPU, before its cells are read.
"""

import multiprocessing
import os
import signal
import sys
from concurrent.futures import ProcessPoolExecutor

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
from experiments.stop_signals import starting_a_child


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
            structure, keys = self._split(overrides)
        except HydraException:
            return OmegaConf.to_container(compose_run_config(overrides))  # raises a ConfigError naming the override
        base = self._compose(structure, quiet=True)
        if base is None or not self._shareable(base, keys):
            config, _ = self._compose(tuple(overrides))
            return copied(config)
        config = copied(base[0])
        for key in keys:
            key.apply(config)
        return config

    def prefetch(self, grid: list[list[str]]) -> None:
        """Composes the structures of the ``grid`` cells' overrides that neither this composer nor the disk cache
        holds, in child processes, one per CPU (a cold paper grid has hundreds; each compose is ~0.1 s of one CPU),
        so that the calls for those cells read them. In ``grid``'s order, up to the first structure that does not
        compose (the calls name the problem; with models first, a broken model is found after a few composes).
        Nothing is done with one CPU, few structures, no fork, or torch imported: the calls compose. The commands
        plan before they import torch; a process that holds it (a test suite's worker) is slow to fork, and its
        children would compete with the work beside it (the default suite took 501 s with them, 466 s without)."""
        workers = usable_cpus()
        if workers < 2 or "fork" not in multiprocessing.get_all_start_methods() or "torch" in sys.modules:
            return
        structures = []
        for overrides in grid:
            try:
                structure, _ = self._split(overrides)
            except HydraException:
                break
            if structure not in self._composed and structure not in structures:
                cached = compose_cache.load(list(structure))
                if cached is not None:
                    self._composed[structure] = cached
                else:
                    structures.append(structure)
        if len(structures) < PARALLEL_FROM:
            return
        # fork: the children start with this process's imports and loaded config files. None is ever signalled (a
        # multiprocessing.Pool's terminate hung: a SIGTERM that reached a child before it set its own handlers was
        # lost); at the end, the composes under way finish and those not started are cancelled
        children = ProcessPoolExecutor(
            min(workers, len(structures)), multiprocessing.get_context("fork"), initializer=_child_started
        )
        try:
            with starting_a_child():  # the children are forked at the first task, with Ctrl-C ignored
                composes = children.map(_composed_or_none, structures)
            for structure, composed in zip(structures, composes):
                if composed is None:
                    break
                config, interpolated, files_read = composed
                compose_cache.store(list(structure), config, interpolated, files_read)
                self._composed[structure] = config, interpolated
        finally:
            children.shutdown(cancel_futures=True)

    def _split(self, overrides: list[str]) -> tuple[tuple[str, ...], list]:
        """(the structure: the overrides less the shared key overrides, the key overrides in order); HydraException
        for an override that does not parse."""
        parsed = [self._parse(text) for text in overrides]
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
        return structure, [key_override(parsed[index]) for index in shared]

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
        config, interpolated, files_read = composed_now(overrides)
        compose_cache.store(overrides, config, interpolated, files_read)
        return config, interpolated

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


# uncached structures from which prefetch composes in child processes: fewer compose in a second or two anyway
PARALLEL_FROM = 16


def usable_cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def composed_now(overrides: list[str]) -> tuple[dict, bool, set]:
    """(the resolved config as plain containers, whether its written config had interpolations, the config files its
    compose read), composed by Hydra; ConfigError for overrides that do not compose."""
    with hydra_files.files_read() as files_read:
        unresolved = compose_unresolved(overrides)
    written = OmegaConf.to_container(unresolved)
    resolve_interpolations(unresolved, overrides)
    interpolated = OmegaConf.to_container(unresolved) != written
    return OmegaConf.to_container(with_size_preset(unresolved, overrides)), interpolated, files_read


def _child_started() -> None:
    """A prefetch child's start. It leaves Ctrl-C to the parent and ends quietly at a SIGTERM to the process group
    (the parent's handlers, inherited, would raise and print a traceback). Its standard streams are new objects on
    file descriptors 1 and 2: another thread of the parent (the command's progress spinner) may have held a stream's
    lock when it forked, and the child's copy of that lock would never be released (the child flushes its streams as
    it ends); the other locks a child takes (imports, logging, malloc) are made anew at a fork."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    sys.stdout = open(1, "w", closefd=False)  # the process's stream until it ends
    sys.stderr = open(2, "w", closefd=False)


def _composed_or_none(structure: tuple[str, ...]) -> tuple[dict, bool, set] | None:
    """``composed_now`` in a prefetch child; None where the structure does not compose."""
    try:
        return composed_now(list(structure))
    except ValueError:
        return None
