"""`xlstm-suite train <overrides>`: one run, recorded in the run store like a sweep's run."""

from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console

from experiments.config.artifacts import PlannedRun, run_id_of
from experiments.config.configuration import compose_run_config
from experiments.config.validation import validate_run_config
from experiments.paths import checked_folder
from experiments.stop_signals import Stopped
from experiments.sweeps.claims import heartbeat_seconds_for, holding
from experiments.sweeps.run_store import (
    DEFAULT_STALE_AFTER_SECONDS,
    RESULT_FILE,
    RUN_STORE,
    claim_run,
    finished_result,
    run_directory,
    write_error,
    write_result,
    write_run_inputs,
)

AD_HOC = "adhoc"  # scale and artifact of runs started outside a sweep


def train_command(overrides: list[str], root: Path = RUN_STORE) -> int:
    """Exit code 0 only for a finished run (trained now or before); a stop signal while it trains (within
    stop_signals_raise, which the command line installs) is recorded in its error.json, one line, 128 + N."""
    console = Console()
    root = checked_folder(root, "--root")
    config = compose_run_config(overrides)
    validate_run_config(config)
    run = PlannedRun(
        artifact=config.artifact or AD_HOC,
        scale=config.scale or AD_HOC,
        cell={},
        overrides=list(overrides),
        config=config,
        run_id=run_id_of(config),
    )
    run_dir = run_directory(run, root)
    finished = finished_result(run_dir)
    if finished is not None:
        console.print(
            f"already done (the same config was trained before; its stored metrics): {run_dir / RESULT_FILE}",
            soft_wrap=True,
        )  # a path stays whole, to be copied
        print_metrics(console, finished["metrics"])
        return 0
    claim = claim_run(run_dir, DEFAULT_STALE_AFTER_SECONDS)
    if claim is None:
        console.print(f"another worker is training this run: {run_dir}", soft_wrap=True)
        return 1
    # said before Lightning's import (seconds), so the command shows at once where the run goes
    console.print(f"training {run_dir}", soft_wrap=True, highlight=False)
    from experiments.training.train import run_training  # imports Lightning: only once the config is known to be good

    started = datetime.now(UTC)
    with holding(claim, heartbeat_seconds_for(DEFAULT_STALE_AFTER_SECONDS)):
        try:
            write_run_inputs(run_dir, run)
            metrics = run_training(config, run_dir)
            write_result(run_dir, run, metrics, started)
        except Exception as error:
            console.print(
                f"[red]failed[/red]: {type(error).__name__}: {error}; see {write_error(run_dir, run, error, started)}",
                soft_wrap=True,
            )
            return 1
        except Stopped as stopped:  # the claim is released on the way out; last.ckpt stays as it was written
            write_error(run_dir, run, stopped, started)
            console.print(
                f"[yellow]stopped by {stopped.name}[/]: the same command resumes {run_dir} from its last checkpoint",
                soft_wrap=True,
                highlight=False,
            )
            return stopped.exit_code
    print_metrics(console, metrics)
    console.print(f"wrote {run_dir / RESULT_FILE}", soft_wrap=True)
    return 0


def print_metrics(console: Console, metrics: dict[str, float]) -> None:
    console.print({name: round(value, 4) for name, value in metrics.items()})
