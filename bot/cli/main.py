"""Entry point of the `perfbot` console script: parse, dispatch, turn user errors into exit 2.

The verbs are listed here by name and one-line help; a verb's module, and with it its heavy
imports (SciPy, GitPython, pydantic, Flask), is imported only when that verb is parsed, so that
`perfbot --help` answers at once and each verb pays only for what it uses.
"""

from __future__ import annotations

import sys
from typing import cast

from bot import __version__
from bot.errors import UserError

from .parsing import LazyVerbs, Parser

# verb -> (the module whose `setup` adds its parser, its line in `perfbot --help`)
VERBS = {
    "score": ("bot.cli.score", "score one unified diff for performance risk"),
    "triage": ("bot.cli.triage", "rank the commits of BASE..HEAD by performance risk"),
    "map": (
        "bot.cli.map_cmd",
        "make a per-step map from a torch-profiler trace and the repository at the traced commit",
    ),
    "config": ("bot.cli.config_cmd", "check or describe .github/perfbot.yml"),
    "bench": ("bot.cli.bench", "benchmark revisions on this machine (runner side)"),
    "compare": (
        "bot.cli.compare",
        "judge a results file: regression, improvement, unchanged or inconclusive",
    ),
    "bisect": ("bot.cli.bisect", "find the commit of GOOD..BAD that made a benchmark slower"),
    "serve": ("bot.cli.serve", "run the webhook server (and the queue consumer)"),
    "deliver": ("bot.cli.deliver", "send a webhook payload to a perfbot server, signed as GitHub signs it"),
    "sandbox": ("bot.cli.sandbox", "try the whole bot on this machine, against a stand-in for GitHub"),
    "worker": ("bot.cli.serve", "run the queue consumer only"),
    "relay": ("bot.cli.relay", "pass webhook deliveries on to a perfbot server, byte for byte"),
}


def build_parser() -> Parser:
    parser = Parser(prog="perfbot", description="Performance review for GPU inference engines.")
    parser.add_argument("--version", action="version", version=f"perfbot {__version__}")
    verbs = cast(
        LazyVerbs,
        parser.add_subparsers(
            dest="command", required=True, metavar="COMMAND", parser_class=Parser, action=LazyVerbs
        ),
    )
    for name, (module, help) in VERBS.items():
        verbs.declare(name, module, help)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return args.run(args)
    except UserError as error:  # a usage mistake, an unreadable repository, an invalid config
        print(f"perfbot: error: {error}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as error:  # an optional dependency this install left out
        from . import missing

        message = missing.hint(error)
        if message is None:
            raise
        print(f"perfbot: error: {message}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        sys.stderr.close()  # the reader went away (`| head`); nothing left to say
        return 0
    except KeyboardInterrupt:
        print("perfbot: interrupted", file=sys.stderr)
        return 130
