"""Command-line arguments shared by the commands that plan an artifact's runs (sweep, report)."""

import argparse

from experiments.config.artifacts import SCALES

SCALE_HELP = "smoke (every code path, seconds per run), mini (one CPU, the paper's finding), paper (GPU cluster)"


def add_scale_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scale", required=True, choices=SCALES, help=SCALE_HELP)


def add_overrides_argument(parser: argparse.ArgumentParser, help_text: str) -> None:
    """Hydra overrides as positionals, accepted anywhere after the artifact.

    argparse fills a ``nargs='*'`` positional once, before the first option (``sweep formal-main --scale mini a=1``
    would leave ``a=1`` unrecognised); words left over after parsing are overrides too."""
    parser.add_argument("overrides", nargs="*", metavar="OVERRIDE", help=help_text)
    parse_known_args = parser.parse_known_args

    def parse_known_args_with_overrides(args=None, namespace=None):
        namespace, extras = parse_known_args(args, namespace)
        namespace.overrides = [*namespace.overrides, *(extra for extra in extras if not extra.startswith("-"))]
        return namespace, [extra for extra in extras if extra.startswith("-")]

    parser.parse_known_args = parse_known_args_with_overrides
