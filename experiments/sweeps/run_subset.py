"""``xlstm-suite sweep ... --where KEY=VALUE``: part of an artifact's grid, e.g. only the sizes another artifact
evaluates (``--where model.embedding_dim=192``) or one model of an ablation. Runs keep their ids (a run of the
subset is the same run as in the whole sweep), so a later sweep of the whole grid skips them. Each KEY is a key of
the artifact's cells; given twice, a key takes either value; a run is kept when it matches every key."""

from collections.abc import Sequence

from experiments.config.artifacts import PlannedRun, override_value


def parse_where(pairs: Sequence[str]) -> dict[str, list[str]]:
    """KEY=VALUE pairs -> key -> the values it may take; ValueError for a pair without '='."""
    where: dict[str, list[str]] = {}
    for pair in pairs:
        key, separator, value = pair.partition("=")
        if not separator or not key:
            raise ValueError(f"--where {pair!r} is not KEY=VALUE (e.g. --where model.embedding_dim=192)")
        where.setdefault(key, []).append(value)
    return where


def same_value(cell_value, text: str) -> bool:
    """Whether a cell's value is the one written on the command line (numbers compared as numbers: 1e-3 = 0.001)."""
    if override_value(cell_value) == text:
        return True
    if isinstance(cell_value, (int, float)) and not isinstance(cell_value, bool):
        try:
            return float(text) == float(cell_value)
        except ValueError:
            return False
    return False


def runs_where(runs: list[PlannedRun], where: dict[str, list[str]]) -> list[PlannedRun]:
    """The runs whose cells match ``where``; ValueError naming a key that no cell has (with the valid keys) or a
    value that no cell has (with the values of that key), before anything runs."""
    keys = list(dict.fromkeys(key for run in runs for key in run.cell))
    for key, values in where.items():
        if key not in keys:
            raise ValueError(f"--where {key}=...: {key!r} is not a key of the artifact's cells; valid keys: {keys}")
        present = list(dict.fromkeys(override_value(run.cell[key]) for run in runs if key in run.cell))
        for value in values:
            if not any(same_value(run.cell[key], value) for run in runs if key in run.cell):
                raise ValueError(f"--where {key}={value}: no cell has that value; its values: {present}")
    return [
        run
        for run in runs
        if all(
            key in run.cell and any(same_value(run.cell[key], value) for value in values)
            for key, values in where.items()
        )
    ]
