"""The parameter count of every finished run of a report: the one its result.json records, or for a run recorded
before runs recorded it (and a committed row without it) the count of its planned config, built on the meta device."""

from collections.abc import Sequence

import pandas as pd
from omegaconf import OmegaConf

from experiments.config.artifacts import PlannedRun
from experiments.run_metrics import PARAMETERS_METRIC
from experiments.training.parameter_count import parameters_of_config


def with_parameter_counts(runs: pd.DataFrame, planned: Sequence[PlannedRun]) -> pd.DataFrame:
    """``runs`` (one row per planned run, with its run id) with PARAMETERS_METRIC filled in for every finished run
    that lacks it; each distinct model and task config is built once."""
    runs = runs.copy()
    if PARAMETERS_METRIC not in runs:
        runs[PARAMETERS_METRIC] = float("nan")
    configs = {run.run_id: run.config for run in planned if run.run_id is not None}
    counted: dict[str, int] = {}
    for index in runs.index[(runs["status"] == "done") & runs[PARAMETERS_METRIC].isna()]:
        config = configs[runs.at[index, "run_id"]]
        built = OmegaConf.to_yaml(OmegaConf.masked_copy(config, ["model", "task", "trainer"]))
        if built not in counted:
            counted[built] = parameters_of_config(config)
        runs.at[index, PARAMETERS_METRIC] = float(counted[built])
    return runs
