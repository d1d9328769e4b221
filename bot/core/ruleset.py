"""Merge a built-in profile with a repository's config and compile it for fast matching."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

import pathspec

from . import profiles
from .config import ConfigError, RepoConfig, Rule, Thresholds, scoped_flags


@dataclass(frozen=True)
class RuleSet:
    """Rules ready to match: globs and regexes compiled once, tokens in one alternation."""

    profile: str
    thresholds: Thresholds
    cold: tuple[tuple[Rule, pathspec.PathSpec], ...]
    paths: tuple[tuple[Rule, pathspec.PathSpec], ...]
    functions: tuple[tuple[Rule, re.Pattern[str]], ...]
    tokens: tuple[Rule, ...]
    token_paths: tuple[pathspec.PathSpec | None, ...]
    token_regex: re.Pattern[str] | None

    def cold_rule(self, path: str) -> Rule | None:
        for rule, spec in self.cold:
            if spec.match_file(path):
                return rule
        return None

    def path_rules(self, path: str) -> list[Rule]:
        return [rule for rule, spec in self.paths if spec.match_file(path)]

    def function_rules(self, name: str) -> list[Rule]:
        return [rule for rule, regex in self.functions if regex.search(name)]

    def tokens_allowed(self, path: str) -> list[bool]:
        """Which token rules may fire in ``path`` (by the rules' own ``paths``)."""
        return [spec is None or spec.match_file(path) for spec in self.token_paths]


def merged_rules(config: RepoConfig, profile: str) -> list[Rule]:
    """The profile's rules adjusted by ``config``: replaced/added, disabled, re-weighted."""
    by_id = {rule.id: rule for rule in profiles.PROFILES[profile]}
    for rule in config.risk.rules:
        by_id[rule.id] = rule
    problems = [f"risk.disable[{i}]: unknown rule id '{rule_id}'"
                for i, rule_id in enumerate(config.risk.disable) if rule_id not in by_id]
    problems += [f"risk.weights.{rule_id}: unknown rule id '{rule_id}'"
                 for rule_id in config.risk.weights if rule_id not in by_id]
    if problems:
        raise ConfigError("config", problems)
    for rule_id in config.risk.disable:
        del by_id[rule_id]
    for rule_id, weight in config.risk.weights.items():
        if rule_id in by_id:
            by_id[rule_id] = by_id[rule_id].model_copy(update={"weight": weight})
    return list(by_id.values())


def build(config: RepoConfig, paths: Iterable[str] = ()) -> RuleSet:
    """Compile the rules for ``config``; ``paths`` picks the profile when it is ``auto``."""
    profile = config.risk.profile
    if profile == "auto":
        profile = profiles.detect(paths)
    return _compile(profile, config.risk.thresholds, tuple(merged_rules(config, profile)))


@lru_cache(maxsize=32)
def _compile(profile: str, thresholds: Thresholds, rules: tuple[Rule, ...]) -> RuleSet:
    tokens = tuple(rule for rule in rules if rule.kind == "token")
    alternation = "|".join(
        f"(?P<perfbot_t{i}>{scoped_flags(rule.pattern)})" for i, rule in enumerate(tokens)
    )
    return RuleSet(
        profile=profile,
        thresholds=thresholds,
        cold=tuple((r, _spec(r.paths)) for r in rules if r.kind == "cold"),
        paths=tuple((r, _spec(r.paths)) for r in rules if r.kind == "path"),
        functions=tuple((r, re.compile(r.pattern)) for r in rules if r.kind == "function"),
        tokens=tokens,
        token_paths=tuple(_spec(r.paths) if r.paths else None for r in tokens),
        token_regex=re.compile(alternation, re.MULTILINE) if tokens else None,
    )


def _spec(globs: list[str]) -> pathspec.PathSpec:
    return pathspec.PathSpec.from_lines("gitwildmatch", globs)
