"""The `xlstm-suite` command line: params, train, prepare, sweep, status, list, report."""

import argparse
import os
import sys
from pathlib import Path

from experiments.stop_signals import Stopped, stop_signals_raise

# the rest is imported where it is used: `train` starts itself again (tcmalloc) before anything heavy is imported


def _add_report_arguments(parser: argparse.ArgumentParser) -> None:
    """Here rather than in experiments.reports.report: parsing must not import the plotting stack."""
    from experiments.config.arguments import add_overrides_argument, add_scale_argument

    parser.add_argument("artifact", help="a paper artifact (see `xlstm-suite list`) or 'all'")
    add_scale_argument(parser)
    parser.add_argument(
        "--force", action="store_true", help="replace an existing report even if the new one has fewer finished cells"
    )
    parser.add_argument("--root", default=None, help="run store (default: results/runs)")
    parser.add_argument("--destination", default=None, help="report folder (default: results/reports)")
    parser.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="only the cells with this value of a cell key (as the sweep's --where); the report is written under a "
        "name of its own, beside the whole grid's",
    )
    add_overrides_argument(parser, "the Hydra overrides the sweep ran with (an ablation)")


def _add_prepare_arguments(parser: argparse.ArgumentParser) -> None:
    from experiments.config.arguments import add_overrides_argument, add_scale_argument

    parser.add_argument("artifact", help="the paper artifact whose runs' data to make")
    add_scale_argument(parser)
    parser.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="only the runs of the cells with this value of a cell key (as the sweep's --where)",
    )
    parser.add_argument("--dry-run", action="store_true", help="list the task configs to prepare; make nothing")
    add_overrides_argument(parser, "the Hydra overrides the sweep runs with (e.g. task=offline_docs)")


def _parser() -> argparse.ArgumentParser:
    from experiments.sweeps.job_status import add_status_arguments
    from experiments.sweeps.status import add_list_arguments
    from experiments.sweeps.sweep import add_sweep_arguments

    parser = argparse.ArgumentParser(prog="xlstm-suite", description="Reproduce the xLSTM paper's tables and figures.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser("params", help="our parameter count of every model and size beside the paper's")
    train = commands.add_parser("train", help="one training run from Hydra overrides, e.g. model=xlstm_0_1 task=parity")
    train.add_argument("overrides", nargs="*", help="Hydra overrides (key=value)")
    train.add_argument("--root", type=Path, default=None, help=argparse.SUPPRESS)  # run store (tests)
    _add_prepare_arguments(
        commands.add_parser(
            "prepare",
            help="make the data of an artifact's runs once (a language model's token cache), before its sweep",
        )
    )
    add_sweep_arguments(commands.add_parser("sweep", help="run the sweep behind a paper artifact"))
    add_status_arguments(
        commands.add_parser(
            "status",
            help="where each run of a sweep stands, its SLURM job asked "
            "once (collects a sweep submitted with --no-wait)",
        )
    )
    add_list_arguments(commands.add_parser("list", help="every artifact and, per scale, runs done / failed / missing"))
    _add_report_arguments(commands.add_parser("report", help="tables and figures of an artifact from finished runs"))
    return parser


def main(argv: list[str] | None = None) -> int:
    """The command line's command (``argv``: sys.argv's arguments); run from the command line (no ``argv``), `train`
    executes itself again first with tcmalloc preloaded (experiments.sweeps.worker_allocator)."""
    if argv is None:
        from experiments.sweeps.worker_allocator import train_restart

        try:
            restart = train_restart(sys.argv)
        except ValueError as error:
            print(f"xlstm-suite train: error: {error}", file=sys.stderr)
            return 2
        if restart is not None:
            command, environment = restart
            os.execve(command[0], command, environment)
    with stop_signals_raise():
        try:
            return run_command(argv)
        except Stopped as stopped:  # sweep and train say more themselves
            print(f"xlstm-suite: {stopped}", file=sys.stderr)
            return stopped.exit_code


def run_command(argv: list[str] | None) -> int:
    from experiments.config.configuration import ConfigError
    from experiments.paths import checked_folder

    arguments = _parser().parse_args(argv)
    try:
        if arguments.command == "params":
            from experiments.reports.params_report import main as params_main

            return params_main()
        if arguments.command == "train":
            from experiments.training.train_command import train_command

            return train_command(arguments.overrides, *([arguments.root] if arguments.root else []))
        if arguments.command == "sweep":
            from experiments.sweeps.sweep import sweep_command

            return sweep_command(arguments)
        if arguments.command == "list":
            from experiments.sweeps.status import list_command

            return list_command(arguments)
        if arguments.command == "status":
            from experiments.sweeps.job_status import status_command

            return status_command(arguments)
        if arguments.command == "prepare":
            return prepare_command(arguments)
        from experiments.config.artifacts import load_artifact, named_artifacts
        from experiments.reports.repository import repository_root, which_repository

        if (which := which_repository()) is not None:  # committed rows are read there whatever the destination
            print(f"xlstm-suite report: {which}", file=sys.stderr)
        results = repository_root() / "results"  # the working directory's checkout, not the install's
        arguments.root = checked_folder(arguments.root or results / "runs", "--root")
        arguments.destination = checked_folder(arguments.destination or results / "reports", "--destination")
        # a bad name or value fails before the plotting stack is imported (planning validates every run); the
        # report takes these plans rather than composing every run again
        if arguments.where and arguments.artifact == "all":
            raise ValueError("--where keeps cells of one artifact; name the artifact instead of 'all'")
        from experiments.sweeps.run_subset import parse_where, runs_where

        where = parse_where(arguments.where)
        planned = {
            name: runs_where(load_artifact(name).runs(arguments.scale, arguments.overrides), where)
            for name in named_artifacts(arguments.artifact, arguments.scale)
        }
        from experiments.reports.report import report_command

        return report_command(arguments, planned)
    except (ConfigError, ValueError) as error:
        print(f"xlstm-suite {arguments.command}: error: {error}", file=sys.stderr)
        return 2


def prepare_command(arguments: argparse.Namespace) -> int:
    """Plan the runs (a bad name or override fails here, before Lightning is imported), then make their data."""
    from rich.console import Console

    from experiments.config.artifacts import load_artifact
    from experiments.sweeps.run_subset import parse_where, runs_where

    runs = load_artifact(arguments.artifact).runs(arguments.scale, arguments.overrides)
    where = parse_where(arguments.where)
    runs = runs_where(runs, where) if where else runs
    from experiments.training.data_preparation import prepare_data, print_preparation

    (print_preparation if arguments.dry_run else prepare_data)(runs, Console())
    return 0


if __name__ == "__main__":
    sys.exit(main())
