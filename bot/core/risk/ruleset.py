"""Merge a built-in profile with a repository's config and compile it for fast matching.

Without a config (None: no file was read) the rules are the profile's plain data as it is, and
the schema (pydantic) is never loaded: `perfbot score` of a diff starts without it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, TypeVar

from bot.core.config import patterns
from bot.core.config.rules import Rule, Thresholds
from bot.core.risk import profiles

if TYPE_CHECKING:
    from bot.core.config.schema import RepoConfig

# Memoised look-ups kept per rule set before starting afresh: triage of a long range meets the
# same paths again and again, but a hostile one could name millions of distinct ones.
_MEMO_LIMIT = 100_000

_Value = TypeVar("_Value")


@dataclass(frozen=True)
class RuleSet:
    """Rules ready to match: globs and regexes compiled once, tokens in one alternation."""

    profile: str
    thresholds: Thresholds
    cold: tuple[tuple[Rule, patterns.Regex], ...]
    paths: tuple[tuple[Rule, patterns.Regex], ...]
    functions: tuple[tuple[Rule, patterns.Regex], ...]
    tokens: tuple[Rule, ...]
    token_paths: tuple[patterns.Regex | None, ...]
    token_regex: patterns.Regex | None
    _by_path: dict[str, tuple[Rule | None, list[Rule], list[bool]]] = field(
        default_factory=dict, compare=False, repr=False
    )
    token_groups: tuple[int, ...] = ()
    _by_function: dict[str, list[Rule]] = field(default_factory=dict, compare=False, repr=False)
    setups: tuple[tuple[Rule, patterns.Regex], ...] = ()
    # (rule, the package names it is about, the manifests it reads)
    dependencies: tuple[tuple[Rule, patterns.Regex, patterns.Regex], ...] = ()
    _by_setup: dict[str, Rule | None] = field(default_factory=dict, compare=False, repr=False)
    _by_manifest: dict[str, list[tuple[Rule, patterns.Regex]]] = field(
        default_factory=dict, compare=False, repr=False
    )

    def token_rule(self, match: patterns.Match) -> int:
        """Index in ``tokens`` of the rule whose group took part in ``match`` of ``token_regex``."""
        for number, group in enumerate(self.token_groups):
            if match.start(group) >= 0:
                return number
        raise LookupError("a token match with no rule group")  # RE2 always sets one

    def for_path(self, path: str) -> tuple[Rule | None, list[Rule], list[bool]]:
        """The cold rule (if any), the path rules, and which token rules may fire, for ``path``.

        Memoised: triage meets the same paths in commit after commit. A path longer than
        `patterns.MAX_PATH_LENGTH` matches no glob: no cold or path rule, and only the token
        rules that are not limited to some files.
        """
        found = self._by_path.get(path)
        if found is None:
            if not patterns.matchable(path):
                return None, [], [rx is None for rx in self.token_paths]
            cold = next((rule for rule, rx in self.cold if rx.search(path)), None)
            hot = [rule for rule, rx in self.paths if rx.search(path)]
            allowed = [rx is None or bool(rx.search(path)) for rx in self.token_paths]
            found = _remember(self._by_path, path, (cold, hot, allowed))
        return found

    def function_rules(self, name: str) -> list[Rule]:
        found = self._by_function.get(name)
        if found is None:
            found = _remember(
                self._by_function, name, [rule for rule, rx in self.functions if rx.search(name)]
            )
        return found

    def setup_rule(self, name: str) -> Rule | None:
        """The set-up rule naming function ``name``, unless a function rule calls it hot."""
        if name not in self._by_setup:
            found = None
            if not self.function_rules(name):
                found = next((rule for rule, rx in self.setups if rx.search(name)), None)
            _remember(self._by_setup, name, found)
        return self._by_setup[name]

    def dependency_rules(self, path: str) -> list[tuple[Rule, patterns.Regex]]:
        """The dependency rules that read ``path``, each with its package-name regex (memoised,
        as `for_path` is)."""
        if not self.dependencies or not patterns.matchable(path):
            return []
        found = self._by_manifest.get(path)
        if found is None:
            found = _remember(
                self._by_manifest,
                path,
                [(rule, names) for rule, names, files in self.dependencies if files.search(path)],
            )
        return found


def _remember(memo: dict[str, _Value], key: str, value: _Value) -> _Value:
    if len(memo) >= _MEMO_LIMIT:
        memo.clear()
    memo[key] = value
    return value


def merged_rules(config: RepoConfig | None, profile: str) -> list[Rule]:
    """The profile's rules adjusted by ``config``: replaced/added, disabled, re-weighted (None:
    no config, the profile's rules as they are)."""
    by_id = {rule.id: rule for rule in profiles.PROFILES[profile]}
    if config is None:
        return list(by_id.values())
    for rule in config.risk.rules:
        by_id[rule.id] = rule.plain()
    problems = unknown_rule_ids(profile, list(by_id), config.risk.disable, config.risk.weights)
    if problems:
        from bot.core.config.schema import ConfigError  # loaded already: ``config`` is one of its models

        raise ConfigError("config", problems)
    for rule_id in config.risk.disable:
        del by_id[rule_id]
    for rule_id, weight in config.risk.weights.items():
        if rule_id in by_id:
            by_id[rule_id] = dataclasses.replace(by_id[rule_id], weight=weight)
    return list(by_id.values())


def unknown_rule_ids(
    profile: str, added: Iterable[str], disable: Iterable[str | None], weights: Iterable[str]
) -> list[str]:
    """The entries of ``risk.disable`` and ``risk.weights`` that name no rule of ``profile`` nor
    of the config's own (``added``), each as a problem with its key path; a None in ``disable``
    holds the place of an entry that is no id at all (the schema says so)."""
    known = {rule.id for rule in profiles.PROFILES[profile]} | set(added)
    problems = [
        f"risk.disable[{i}]: unknown rule id '{rule_id}'"
        for i, rule_id in enumerate(disable)
        if rule_id is not None and rule_id not in known
    ]
    problems += [
        f"risk.weights.{rule_id}: unknown rule id '{rule_id}'" for rule_id in weights if rule_id not in known
    ]
    return problems


def build(config: RepoConfig | None, paths: Iterable[str] = (), profile: str | None = None) -> RuleSet:
    """Compile the rules for ``config`` (None: the defaults); ``profile``, when given, instead of
    the config's; ``paths`` picks the profile when it is ``auto``."""
    chosen: str = profile or (config.risk.profile if config is not None else "auto")
    if chosen == "auto":
        chosen = profiles.detect(paths)
    thresholds = config.risk.thresholds.plain() if config is not None else Thresholds()
    return _compile(chosen, thresholds, tuple(merged_rules(config, chosen)))


@lru_cache(maxsize=32)
def _compile(profile: str, thresholds: Thresholds, rules: tuple[Rule, ...]) -> RuleSet:
    tokens = tuple(rule for rule in rules if rule.kind == "token")
    alternation = "|".join(
        f"(?P<perfbot_t{i}>{patterns.scoped_flags(rule.required_pattern)})" for i, rule in enumerate(tokens)
    )
    token_regex = patterns.regex(alternation) if tokens else None
    return RuleSet(
        profile=profile,
        thresholds=thresholds,
        cold=tuple((r, patterns.glob_regex(r.paths)) for r in rules if r.kind == "cold"),
        paths=tuple((r, patterns.glob_regex(r.paths)) for r in rules if r.kind == "path"),
        functions=tuple((r, patterns.regex(r.required_pattern)) for r in rules if r.kind == "function"),
        tokens=tokens,
        token_paths=tuple(patterns.glob_regex(r.paths) if r.paths else None for r in tokens),
        token_regex=token_regex,
        token_groups=tuple(token_regex.groupindex[f"perfbot_t{i}"] for i in range(len(tokens)))
        if token_regex
        else (),
        setups=tuple((r, patterns.regex(r.required_pattern)) for r in rules if r.kind == "setup"),
        dependencies=tuple(
            (r, patterns.regex(f"(?i)^(?:{r.required_pattern})$"), patterns.glob_regex(r.paths))
            for r in rules
            if r.kind == "dependency"
        ),
    )
