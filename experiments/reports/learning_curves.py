"""Learning curves of a report's training runs: the selection metric at every validation of each run, committed
beside the report as ``<report>.curves.csv`` and drawn as ``<report>.curves.png`` (one line per run, a panel per
cell's other keys), so that a finding that does not show at a scale's budget is shown with the curves that say how
far each model got, and a fresh clone redraws them from the committed rows as it does the report.

A run's metrics.csv logs a validation during training at the optimizer step before the one it follows (Lightning
counts the step the batch began at: the validation after 250 steps at step 249) and the final validation of the
chosen checkpoint after training at its last step; a curve keeps the former, at the steps taken (logged + 1).
"""

import textwrap
from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from experiments.atomic import write_text_atomic
from experiments.config.artifacts import PlannedRun
from experiments.display import model_name, value_name
from experiments.reports.committed_runs import SOURCE
from experiments.reports.figures import save
from experiments.reports.palette import colours
from experiments.sweeps.run_store import METRICS_FILE, run_directory

SUFFIX = ".curves.csv"
FIGURE_SUFFIX = ".curves"  # the figure's stem suffix: <report>.curves.png and .pdf
STEP = "step"
VALIDATION_PREFIX = "val/"
STEPS_METRIC = "train/steps"
LOG_SPAN = 10  # a metric whose values span this factor or more (a perplexity) is drawn on a log axis
PANELS_PER_ROW = 4
PANEL_TITLE_CHARACTERS = 34  # a line of a panel's title: about the width of a panel (3.4 in) at the title's size


def curves_path(stem: Path) -> Path:
    return stem.with_name(stem.name + SUFFIX)


def curve_metric(selection_metric: str) -> str | None:
    """The metric a curve follows: the selection metric when training validates it (``val/...``), else None (an
    evaluation's metric, e.g. paloma/average, has no curve)."""
    return selection_metric if selection_metric.startswith(VALIDATION_PREFIX) else None


def store_curve(metrics_csv: Path, metric: str, steps: float) -> pd.DataFrame:
    """One run's validations during training: (step taken, value); empty without the file or the metric."""
    if not metrics_csv.exists():
        return pd.DataFrame(columns=[STEP, metric])
    logged = pd.read_csv(metrics_csv)
    if metric not in logged or STEP not in logged:
        return pd.DataFrame(columns=[STEP, metric])
    during = logged.dropna(subset=[metric])
    during = during[during[STEP] < steps]  # the final validation of the chosen checkpoint is logged at the last step
    return pd.DataFrame({STEP: during[STEP].to_numpy() + 1, metric: during[metric].to_numpy()})


def read_committed_curves(*paths: Path) -> pd.DataFrame | None:
    """The committed curves of the files that exist (run ids as text), a run in an earlier file winning over a
    later one (the curves beside the report written, then the repository's)."""
    frames = [pd.read_csv(path, dtype={"run_id": str}) for path in dict.fromkeys(paths) if path.exists()]
    if not frames:
        return None
    curves = pd.concat(frames, keys=range(len(frames)), names=["file", None]).reset_index(level="file")
    first_file = curves.groupby("run_id")["file"].transform("min")
    return curves[curves["file"] == first_file].drop(columns="file").reset_index(drop=True)


def curves_frame(
    runs: pd.DataFrame,
    planned: Sequence[PlannedRun],
    root: Path,
    metric: str,
    keys: list[str],
    committed: pd.DataFrame | None,
) -> pd.DataFrame:
    """One row per validation of each finished run: its cell keys, run id, step and value; from the run store's
    metrics.csv for a run the store finished, from the committed curves for a run the report takes from committed
    rows (none where they hold no curve of it)."""
    by_id = {run.run_id: run for run in planned}
    committed_ids = set(committed["run_id"]) if committed is not None else set()
    pieces = []
    for _, row in runs[runs["status"] == "done"].iterrows():
        if row[SOURCE] == "store" and row["run_id"] in by_id:
            steps = row.get(STEPS_METRIC, float("inf"))
            curve = store_curve(run_directory(by_id[row["run_id"]], root) / METRICS_FILE, metric, steps)
        elif row[SOURCE] == "committed" and row["run_id"] in committed_ids:
            curve = committed.loc[committed["run_id"] == row["run_id"], [STEP, metric]]
        else:
            continue
        if len(curve):
            pieces.append(curve.assign(run_id=row["run_id"], **{key: row[key] for key in keys}))
    columns = [*keys, "run_id", STEP, metric]
    return pd.concat(pieces, ignore_index=True)[columns] if pieces else pd.DataFrame(columns=columns)


def stage_curves(curves: pd.DataFrame, staged: Path, panel_keys: list[str], what: str, finished: int) -> str:
    """Write the curves and their figure beside the staged report ``staged`` (its stem) and return the page's
    section; ``what`` names the report in the figure's title, ``finished`` counts its finished runs."""
    write_text_atomic(curves_path(staged), curves.to_csv(index=False))
    metric = curves.columns[-1]
    figure = curves_figure(curves, metric, panel_keys, f"{what}: {metric} during training")
    save(figure, staged.with_name(staged.name + FIGURE_SUFFIX))
    figure_name = f"{staged.name}{FIGURE_SUFFIX}.png"
    return curves_markdown(figure_name, curves_path(staged).name, metric, curves["run_id"].nunique(), finished)


def curves_figure(curves: pd.DataFrame, metric: str, panel_keys: list[str], title: str) -> plt.Figure:
    """A panel per value of ``panel_keys`` (the report's cells other than the model, and the keys it chooses
    among), titled by them (wrapped to the panel's width), a model's own colour, a line per run (its seeds alike);
    ``curves`` has rows."""
    panel_keys = [key for key in panel_keys if key in curves]  # one value too: the panel says what it shows
    data = curves.assign(
        panel=[
            textwrap.fill(
                ", ".join(value_name(key, value) for key, value in zip(panel_keys, values)),
                PANEL_TITLE_CHARACTERS,
                break_long_words=False,
            )
            for values in curves[panel_keys].itertuples(index=False)
        ],
        shown_model=curves["model"].map(model_name),
    )
    panels = list(dict.fromkeys(data["panel"]))
    palette = {model_name(model): colour for model, colour in colours("model", curves["model"]).items()}
    grid = sns.relplot(
        data=data,
        x=STEP,
        y=metric,
        hue="shown_model",
        palette=palette,
        units="run_id",
        estimator=None,
        kind="line",
        col="panel",
        col_order=panels,
        col_wrap=min(PANELS_PER_ROW, len(panels)),
        height=2.6,
        aspect=1.3,
        facet_kws={"sharey": True, "sharex": False},
        linewidth=1.0,
        alpha=0.85,
    )
    values = data[metric].dropna()
    if len(values) and values.min() > 0 and values.max() >= LOG_SPAN * values.min():
        grid.set(yscale="log")
    grid.set_titles("{col_name}")
    grid.set_axis_labels("training steps", metric)
    grid.legend.set_title("")
    grid.figure.suptitle(title)
    grid.tight_layout()  # room for the title and for panel titles wrapped over several lines
    return grid.figure


def curves_markdown(figure_name: str, csv_name: str, metric: str, drawn: int, finished: int) -> str:
    """The page's section; ``drawn`` of the ``finished`` runs have a curve (a run the report takes from committed
    rows written before curves were committed has none)."""
    which = (
        "every finished run"
        if drawn == finished
        else f"{drawn} of the {finished} finished runs (the others' rows were committed without their curves)"
    )
    return (
        "## Learning curves\n\n"
        f"{metric} at every validation during training, one line per run, for {which}: "
        f"[{csv_name}]({csv_name}).\n\n![learning curves]({figure_name})\n"
    )
