"""A report made with Hydra overrides or ``--where`` pairs (an ablation, a part of the grid, the offline corpus of the
mini language-model reports) records them beside itself, ``<report>.overrides.json``, so that ``report all``
regenerates it with them in a clone, as it regenerates each artifact's own report."""

import json
from pathlib import Path

from experiments.atomic import write_text_atomic
from experiments.sweeps.status import own_report_files

SUFFIX = ".overrides.json"


def variant_path(stem: Path) -> Path:
    return stem.with_name(stem.name + SUFFIX)


def write_variant(stem: Path, overrides: list[str], where: list[str]) -> None:
    write_text_atomic(variant_path(stem), json.dumps({"overrides": overrides, "where": where}, indent=1) + "\n")


def variant_description(stem: Path) -> str | None:
    """What a report was made with, as a user types it ("task=offline_docs; --where seed=0"), from the record
    beside it; None for a report without one."""
    path = variant_path(stem)
    if not path.is_file():
        return None
    record = json.loads(path.read_text())
    return "; ".join([*record["overrides"], *(f"--where {pair}" for pair in record["where"])]) or None


def committed_variants(reports: Path, scale: str, artifact: str) -> list[tuple[list[str], list[str]]]:
    """The (overrides, where pairs) of each report of ``artifact`` at ``scale`` in ``reports`` made with them, in
    the order of their names; a record that is not one is a ValueError naming it."""
    variants = []
    for path in own_report_files(reports, scale, artifact, SUFFIX):
        try:
            record = json.loads(path.read_text())
            variants.append(([str(item) for item in record["overrides"]], [str(item) for item in record["where"]]))
        except (ValueError, KeyError, TypeError) as error:
            restore = f"`git checkout -- {path}` restores it"
            raise ValueError(f"{path} is not a report's overrides ({error!r}); {restore}") from error
    return variants
