"""`perfbot config validate` and `perfbot config schema`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bot.core.config import schema as repo_config
from bot.core.config.schema import ConfigError
from bot.core.render import risk as render_risk
from bot.core.risk import profiles, ruleset

from .common import FORMATS, UsageError, emit, load_config, print_json


def setup(subparsers) -> None:
    parser = subparsers.add_parser("config", help="check or describe .github/perfbot.yml")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="{validate,schema,rules}")
    validate = verbs.add_parser("validate", help="check a config file; list every problem")
    validate.add_argument("file", metavar="FILE")
    validate.set_defaults(run=run_validate)
    schema = verbs.add_parser("schema", help="print the config's JSON schema")
    schema.set_defaults(run=run_schema)
    rules = verbs.add_parser("rules", help="list the risk rules in force: a profile merged with a config")
    rules.add_argument("--profile", choices=tuple(profiles.PROFILES), default="generic",
                       help="built-in profile (default: generic); the config's profile wins if set")
    rules.add_argument("--config", metavar="FILE", help="a repository config to merge in")
    rules.add_argument("--format", choices=FORMATS, default="text")
    rules.set_defaults(run=run_rules)


def run_validate(args: argparse.Namespace) -> int:
    try:
        text = Path(args.file).read_bytes()
    except OSError as error:
        raise UsageError(f"{args.file}: cannot read ({error.strerror})") from None
    try:
        config = repo_config.load(text, args.file)
        names = [config.risk.profile] if config.risk.profile != "auto" else list(profiles.PROFILES)
        counts = [len(ruleset.merged_rules(config, name)) for name in names]
    except ConfigError as error:
        for problem in error.problems:
            print(f"{args.file}: {problem}", file=sys.stderr)
        return 2
    summary = ", ".join(f"{n} rules with profile {p}" for p, n in zip(names, counts, strict=True))
    print(f"{args.file}: valid ({summary})")
    return 0


def run_rules(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    profile = config.risk.profile if config.risk.profile != "auto" else args.profile
    merged = ruleset.merged_rules(config, profile)
    emit(args.format, lambda: [rule.model_dump() for rule in merged],
         lambda: render_risk.rules_markdown(merged), lambda: render_risk.rules_text(merged))
    return 0


def run_schema(args: argparse.Namespace) -> int:
    print_json(repo_config.schema())
    return 0
