"""Merge a built-in profile with a repository's config and compile it for fast matching."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

import re2

from bot.core.config import patterns
from bot.core.config.schema import ConfigError, RepoConfig, Rule, Thresholds
from bot.core.risk import profiles


@dataclass(frozen=True)
class RuleSet:
    """Rules ready to match: globs and regexes compiled once, tokens in one alternation."""

    profile: str
    thresholds: Thresholds
    cold: tuple[tuple[Rule, re.Pattern[str]], ...]
    paths: tuple[tuple[Rule, re.Pattern[str]], ...]
    functions: tuple[tuple[Rule, re2._Regexp], ...]
    tokens: tuple[Rule, ...]
    token_paths: tuple[re.Pattern[str] | None, ...]
    token_regex: re2._Regexp | None
    _by_path: dict[str, tuple[Rule | None, list[Rule], list[bool]]] = field(
        default_factory=dict, compare=False, repr=False)
    token_groups: tuple[int, ...] = ()
    _by_function: dict[str, list[Rule]] = field(default_factory=dict, compare=False, repr=False)

    def token_rule(self, match) -> int:
        """Index in ``tokens`` of the rule whose group took part in ``match`` of ``token_regex``."""
        for number, group in enumerate(self.token_groups):
            if match.start(group) >= 0:
                return number
        raise LookupError("a token match with no rule group")  # RE2 always sets one

    def for_path(self, path: str) -> tuple[Rule | None, list[Rule], list[bool]]:
        """The cold rule (if any), the path rules, and which token rules may fire, for ``path``.

        Memoised: triage meets the same paths in commit after commit.
        """
        found = self._by_path.get(path)
        if found is None:
            cold = next((rule for rule, rx in self.cold if rx.match(path)), None)
            hot = [rule for rule, rx in self.paths if rx.match(path)]
            allowed = [rx is None or bool(rx.match(path)) for rx in self.token_paths]
            found = self._by_path[path] = (cold, hot, allowed)
        return found

    def function_rules(self, name: str) -> list[Rule]:
        found = self._by_function.get(name)
        if found is None:
            found = self._by_function[name] = [rule for rule, rx in self.functions if rx.search(name)]
        return found


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
        f"(?P<perfbot_t{i}>{patterns.scoped_flags(rule.pattern)})" for i, rule in enumerate(tokens)
    )
    token_regex = patterns.regex(alternation) if tokens else None
    return RuleSet(
        profile=profile,
        thresholds=thresholds,
        cold=tuple((r, patterns.glob_regex(r.paths)) for r in rules if r.kind == "cold"),
        paths=tuple((r, patterns.glob_regex(r.paths)) for r in rules if r.kind == "path"),
        functions=tuple((r, patterns.regex(r.pattern)) for r in rules if r.kind == "function"),
        tokens=tokens,
        token_paths=tuple(patterns.glob_regex(r.paths) if r.paths else None for r in tokens),
        token_regex=token_regex,
        token_groups=tuple(token_regex.groupindex[f"perfbot_t{i}"] for i in range(len(tokens)))
        if token_regex else (),
    )
