"""An evaluating artifact written by a test ("probe", evaluating temp_sclaw300B with a kind and its settings) and
the error its loading raises: how the evaluation kinds' tests check that a bad setting is named at load."""

from pathlib import Path

import pytest

from experiments.config.artifacts import load_artifact


def load_error(artifact_folder: Path, kind: str, settings: str, metric: str) -> str:
    """The ValueError message of loading the probe artifact; ``settings`` a YAML mapping, ``metric`` its selection's."""
    (artifact_folder / "probe.yaml").write_text(
        f"artifact: probe\nevaluates: {{artifact: temp_sclaw300B, kind: {kind}, settings: {settings}}}\n"
        f"selection: {{metric: {metric}, mode: min, choose: [], average: [seed]}}\n"
        f"report: {{kind: table, cells: [model], metric: {metric}}}\nscales: {{smoke: {{}}, paper: {{}}}}\n"
    )
    with pytest.raises(ValueError) as error:
        load_artifact("probe")
    return str(error.value)
