"""The `xlstm-suite` command line: params, train, sweep, list, report."""

import argparse
import sys

from experiments.configuration import ConfigError


def _add_report_arguments(parser: argparse.ArgumentParser) -> None:
    """Here rather than in experiments.report: parsing must not import pandas and matplotlib."""
    parser.add_argument("artifact", help="a paper artifact (see `xlstm-suite list`) or 'all'")
    parser.add_argument("--scale", default="paper", help="smoke, mini or paper (default: paper)")
    parser.add_argument("--root", default=None, help="run store (default: results/runs)")
    parser.add_argument("--destination", default=None, help="report folder (default: results/reports)")
    parser.add_argument("overrides", nargs="*", help="the Hydra overrides the sweep ran with (an ablation)")


def _parser() -> argparse.ArgumentParser:
    from experiments.status import add_list_arguments
    from experiments.sweep import add_sweep_arguments

    parser = argparse.ArgumentParser(prog="xlstm-suite", description="Reproduce the xLSTM paper's tables and figures.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser("params", help="our parameter count of every model and size beside the paper's")
    train = commands.add_parser("train", help="one training run from Hydra overrides, e.g. model=xlstm_0_1 task=parity")
    train.add_argument("overrides", nargs="*", help="Hydra overrides (key=value)")
    add_sweep_arguments(commands.add_parser("sweep", help="run the sweep behind a paper artifact"))
    add_list_arguments(commands.add_parser("list", help="every artifact and, per scale, runs done / failed / missing"))
    _add_report_arguments(commands.add_parser("report", help="tables and figures of an artifact from finished runs"))
    return parser


def main(argv: list[str] | None = None) -> int:
    arguments = _parser().parse_args(argv)
    try:
        if arguments.command == "params":
            from experiments.params_report import main as params_main

            return params_main()
        if arguments.command == "train":
            from experiments.train_command import train_command

            return train_command(arguments.overrides)
        if arguments.command == "sweep":
            from experiments.sweep import sweep_command

            return sweep_command(arguments)
        if arguments.command == "list":
            from experiments.status import list_command

            return list_command(arguments)
        from experiments.artifacts import check_scale, load_artifact

        check_scale(arguments.scale)  # bad names fail before pandas and matplotlib are imported
        if arguments.artifact != "all":
            load_artifact(arguments.artifact)
        from experiments.report import report_command

        return report_command(arguments)
    except (ConfigError, ValueError) as error:
        print(f"xlstm-suite {arguments.command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
