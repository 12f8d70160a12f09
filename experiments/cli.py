"""The `xlstm-suite` command line."""

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="xlstm-suite", description="Reproduce the xLSTM paper's tables and figures.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser("params", help="our parameter count of every model and size beside the paper's")
    arguments = parser.parse_args(argv)
    if arguments.command == "params":
        from experiments.params_report import main as params_main

        return params_main()
    parser.error(f"unknown command {arguments.command!r}")


if __name__ == "__main__":
    sys.exit(main())
