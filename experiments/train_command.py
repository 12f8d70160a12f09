"""`xlstm-suite train <overrides>`: one run, recorded in the run store like a sweep's run."""

from datetime import datetime, timezone

from rich.console import Console

from experiments.artifacts import PlannedRun, run_id_of
from experiments.claims import heartbeat_seconds_for, holding
from experiments.configuration import compose_run_config
from experiments.run_store import DEFAULT_STALE_AFTER_SECONDS, RESULT_FILE, RUN_STORE, claim_run, run_directory, \
    write_error, write_result, write_run_inputs
from experiments.validation import validate_run_config

AD_HOC = "adhoc"  # scale and artifact of runs started outside a sweep


def train_command(overrides: list[str]) -> int:
    console = Console()
    config = compose_run_config(overrides)
    validate_run_config(config)
    run = PlannedRun(
        artifact=config.artifact or AD_HOC, scale=config.scale or AD_HOC, cell={}, overrides=list(overrides),
        config=config, run_id=run_id_of(config),
    )
    run_dir = run_directory(run, RUN_STORE)
    if (run_dir / RESULT_FILE).exists():
        console.print(f"already done: {run_dir / RESULT_FILE}")
        return 0
    claim = claim_run(run_dir, DEFAULT_STALE_AFTER_SECONDS)
    if claim is None:
        console.print(f"another worker is training this run: {run_dir}")
        return 1
    from experiments.train import run_training  # imports Lightning: only once the config is known to be good

    started = datetime.now(timezone.utc)
    with holding(claim, heartbeat_seconds_for(DEFAULT_STALE_AFTER_SECONDS)):
        try:
            write_run_inputs(run_dir, run)
            metrics = run_training(config, run_dir)
        except Exception as error:
            console.print(f"[red]failed[/red]: {type(error).__name__}: {error}; see {write_error(run_dir, run, error, started)}")
            return 1
        write_result(run_dir, run, metrics, started)
    console.print({name: round(value, 4) for name, value in metrics.items()})
    console.print(f"wrote {run_dir / RESULT_FILE}")
    return 0
