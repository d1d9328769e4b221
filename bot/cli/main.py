"""Entry point of the `perfbot` console script: parse, dispatch, turn user errors into exit 2."""

from __future__ import annotations

import sys

from bot import __version__
from bot.adapters.git_repo import RepoError
from bot.core.config.schema import ConfigError

from . import bench, bisect, compare, config_cmd, score, serve, triage
from .common import Parser, UsageError

VERBS = (score, triage, config_cmd, bench, compare, bisect, serve)


def build_parser() -> Parser:
    parser = Parser(prog="perfbot", description="Performance review for GPU inference engines.")
    parser.add_argument("--version", action="version", version=f"perfbot {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                       parser_class=Parser)
    for verb in VERBS:
        verb.setup(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return args.run(args)
    except (UsageError, RepoError, ConfigError) as error:
        print(f"perfbot: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        sys.stderr.close()  # the reader went away (`| head`); nothing left to say
        return 0
    except KeyboardInterrupt:
        print("perfbot: interrupted", file=sys.stderr)
        return 130
