"""A planned run: one cell of an artifact's grid at one scale, with its overrides, its resolved config and its id."""

from typing import Any

from omegaconf import DictConfig, OmegaConf

from experiments.config.plain_config import as_omegaconf


class PlannedRun:
    """One cell of an artifact's grid at one scale; ``config`` and ``run_id`` only when it is available.

    Planning keeps a run's resolved config as plain containers (``container``, experiments.config.plain_config);
    ``config``, an OmegaConf tree of it, is built when first asked for (a grid of 720 runs would spend seconds
    building trees that `list` and a dry run never read). A change to that tree changes neither the container nor
    the run id."""

    def __init__(
        self,
        artifact: str,
        scale: str,
        cell: dict[str, Any],
        overrides: list[str],
        unavailable: str | None = None,
        config: DictConfig | None = None,
        run_id: str | None = None,
        trained_by: "PlannedRun | None" = None,
        container: dict | None = None,
    ):
        self.artifact = artifact
        self.scale = scale
        self.cell = cell
        self.overrides = overrides
        self.unavailable = unavailable
        self.run_id = run_id
        self.trained_by = trained_by  # an evaluation-only run: the training run whose checkpoint it evaluates
        self._config = config
        self._container = container

    @property
    def config(self) -> DictConfig | None:
        if self._config is None and self._container is not None:
            self._config = as_omegaconf(self._container)
        return self._config

    @config.setter
    def config(self, config: DictConfig | None) -> None:
        self._config, self._container = config, None

    @property
    def container(self) -> dict | None:
        """The resolved config as plain containers (read it, do not change it)."""
        if self._container is None and self._config is not None:
            self._container = OmegaConf.to_container(self._config, resolve=True)
        return self._container

    @property
    def label(self) -> str:
        """The cell as ``key=value`` pairs, e.g. ``model=xlstm_1_0 task=parity optim.lr=0.001 seed=0``."""
        return " ".join(f"{key}={override_value(value)}" for key, value in self.cell.items())

    def __repr__(self) -> str:
        return f"PlannedRun({self.artifact!r}, {self.scale!r}, {self.label!r}, run_id={self.run_id!r})"


def override_value(value: Any, quote_strings: bool = False) -> str:
    """A value in Hydra's override syntax (``null``, ``true``, ``[1,2]``, ``{a:1}``, optionally ``'text'``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(override_value(item, quote_strings) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{key}:{override_value(item, quote_strings)}" for key, item in value.items()) + "}"
    if isinstance(value, str) and quote_strings:
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return str(value)
