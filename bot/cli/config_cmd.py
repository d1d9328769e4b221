"""`perfbot config validate`, `perfbot config schema` and `perfbot config rules`."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from bot.core.config import schema as repo_config
from bot.core.config.schema import ConfigError, RepoConfig
from bot.core.config.source import WORK_TREE
from bot.core.render import risk as render_risk
from bot.core.risk import profiles, ruleset

from .common import FORMATS, UsageError, emit, load_config, print_json, with_profile

if TYPE_CHECKING:
    from bot.adapters.git_repo import GitRepo


def setup(subparsers) -> None:
    parser = subparsers.add_parser("config", help="check or describe .github/perfbot.yml")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="{validate,schema,rules}")
    validate = verbs.add_parser("validate", help="check a config file; list every problem")
    validate.add_argument("file", metavar="FILE")
    validate.set_defaults(run=run_validate)
    schema = verbs.add_parser("schema", help="print the config's JSON schema")
    schema.set_defaults(run=run_schema)
    rules = verbs.add_parser("rules", help="list the risk rules in force: a profile merged with a config")
    rules.add_argument(
        "--profile",
        choices=("auto", *profiles.PROFILES),
        help="built-in profile (default: the config's, else auto); auto picks it "
        "from the files of --repo's HEAD",
    )
    rules.add_argument(
        "--config", metavar="FILE", help="a repository config to merge in (default: --repo's, if it has one)"
    )
    rules.add_argument(
        "--repo",
        default=".",
        metavar="PATH",
        help="the repository that --profile auto looks at (default: the current "
        "directory; outside a repository auto means generic)",
    )
    rules.add_argument("--format", choices=FORMATS, default="text")
    rules.set_defaults(run=run_rules)


def run_validate(args: argparse.Namespace) -> int:
    """Every problem of the file: the schema's (types, ranges, unknown keys) and the rule ids that
    name no rule, these too when the schema found problems elsewhere."""
    try:
        text = Path(args.file).read_bytes()
    except OSError as error:
        raise UsageError(f"{args.file}: cannot read ({error.strerror})") from None
    config: RepoConfig | None = None
    try:
        config = repo_config.load(text, args.file)
        problems: list[str] = []
    except ConfigError as error:
        problems = list(error.problems)
    problems += _rule_id_problems(*_rule_ids(config, text))
    if problems or config is None:
        for problem in problems:
            print(f"{args.file}: {problem}", file=sys.stderr)
        return 2
    names = [config.risk.profile] if config.risk.profile != "auto" else list(profiles.PROFILES)
    counts = [len(ruleset.merged_rules(config, name)) for name in names]
    summary = ", ".join(f"{n} rules with profile {p}" for p, n in zip(names, counts, strict=True))
    print(f"{args.file}: valid ({summary})")
    return 0


RuleIds = tuple[str, list[str], list[str | None], list[str]]  # profile, added ids, disable, weights


def _rule_ids(config: RepoConfig | None, text: bytes) -> RuleIds:
    """What the rule-id check needs: from the config, else what can be read of the file's
    ``risk`` section (the entries of the wrong type were reported by the schema already)."""
    if config is not None:
        risk = config.risk
        return risk.profile, [r.id for r in risk.rules], list(risk.disable), list(risk.weights)
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return "auto", [], [], []
    raw = data.get("risk") if isinstance(data, dict) else None
    if not isinstance(raw, dict):
        return "auto", [], [], []
    given = raw.get("profile")  # any YAML value: a list or a mapping cannot be a key of PROFILES
    profile = given if isinstance(given, str) and given in profiles.PROFILES else "auto"
    rules, disable, weights = raw.get("rules"), raw.get("disable"), raw.get("weights")
    rules = rules if isinstance(rules, list) else []
    disable = disable if isinstance(disable, list) else []
    weights = weights if isinstance(weights, dict) else {}
    added = [r["id"] for r in rules if isinstance(r, dict) and isinstance(r.get("id"), str)]
    return (
        profile,
        added,
        [d if isinstance(d, str) else None for d in disable],
        [w for w in weights if isinstance(w, str)],
    )


def _rule_id_problems(
    profile: str, added: list[str], disable: list[str | None], weights: list[str]
) -> list[str]:
    """Unknown rule ids; with profile auto, checked against every profile it may pick, and named
    with the profiles that lack it when not all do."""
    names = [profile] if profile != "auto" else list(profiles.PROFILES)
    lacking: dict[str, list[str]] = {}
    for name in names:
        for problem in ruleset.unknown_rule_ids(name, added, disable, weights):
            lacking.setdefault(problem, []).append(name)
    problems = []
    for problem, where in lacking.items():
        if len(where) < len(names):
            profile_names = f"profiles {' and '.join(where)}" if len(where) > 1 else f"profile {where[0]}"
            problem += f" in {profile_names}, which 'profile: auto' may pick"
        problems.append(problem)
    return problems


def run_rules(args: argparse.Namespace) -> int:
    repo = _repo_or_none(args.repo)
    text = repo.config_text(WORK_TREE) if repo is not None and args.config is None else None
    config = with_profile(load_config(args.config, text, WORK_TREE), args.profile)
    profile: str = config.risk.profile
    if profile == "auto":  # as `score` and `triage` decide it: from the files the repository holds
        head = repo.head_sha() if repo is not None else None
        paths = repo.existing_paths(head, profiles.MARKERS) if repo is not None and head else []
        profile = profiles.detect(paths)
    merged = ruleset.merged_rules(config, profile)
    emit(
        args.format,
        lambda: [dataclasses.asdict(rule) for rule in merged],
        lambda: render_risk.rules_markdown(merged),
        lambda: render_risk.rules_text(merged),
    )
    return 0


def _repo_or_none(path: str) -> GitRepo | None:
    from bot.adapters.git_repo import GitRepo, RepoError  # only `rules` needs git

    try:
        return GitRepo.open(path)
    except RepoError:
        return None


def run_schema(args: argparse.Namespace) -> int:
    print_json(repo_config.schema())
    return 0
