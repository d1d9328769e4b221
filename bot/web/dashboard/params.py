"""Query parameters of the dashboard's pages and API, parsed strictly: a value out of its set, a
malformed date or repository name is a 400 that says which parameter and what it expects;
sizes and page numbers out of range are clamped, never an error and never unbounded."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from flask.sansio.blueprints import BlueprintSetupState
from werkzeug.datastructures import MultiDict
from werkzeug.exceptions import BadRequest
from werkzeug.routing import IntegerConverter

from bot.service.dashboard.history import DEFAULT_POINTS, MAX_POINTS
from bot.service.dashboard.triage import MAX_NUMBER
from bot.service.ports.dashboard import LEVELS, SORTS, STATES, VERDICTS, MergeQuery

REPO = re.compile(r"^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$")
NAME = re.compile(r"^[A-Za-z0-9_.:/@+-]{1,100}$")  # a suite or metric name, as results files allow
DEFAULT_PER_PAGE, MAX_PER_PAGE, MAX_PAGE = 50, 200, 100_000
MIN_POINTS = 10
MAX_VALUES = 20  # repeated parameters (repo=a&repo=b...)


class PullRequestNumber(IntegerConverter):
    """A pull request number in a route (`<pr_number:number>`): GitHub numbers them from 1 and
    the store keeps 32 bits, so a larger one matches no route (a 404), never a database error."""

    def __init__(self, map: Any) -> None:
        super().__init__(map, min=1, max=MAX_NUMBER)


def install_converters(state: BlueprintSetupState) -> None:
    """For `Blueprint.record_once`, before the blueprint's routes: the converters they use."""
    state.app.url_map.converters.setdefault("pr_number", PullRequestNumber)


class BadParameter(BadRequest):
    def __init__(self, name: str, expected: str):
        super().__init__(f"{name}: expected {expected}")


def query_args(args: MultiDict[str, str]) -> dict[str, Any]:
    """The request's parameters as url_for takes them (repeated ones as lists)."""
    return args.to_dict(flat=False)


def merge_query(args: MultiDict[str, str], visible: frozenset[str] | None) -> MergeQuery:
    since, until = dates(args)
    return MergeQuery(
        visible=visible,
        repos=tuple(repo(v) for v in _values(args, "repo")),
        levels=_choices(args, "level", LEVELS),
        verdicts=_choices(args, "verdict", VERDICTS),
        states=_choices(args, "state", STATES),
        since=since,
        until=until,
        sort=_choice(args, "sort", SORTS, "merged"),
        descending=_choice(args, "order", ("desc", "asc"), "desc") == "desc",
        page=clamped(args, "page", 1, 1, MAX_PAGE),
        per_page=clamped(args, "per_page", DEFAULT_PER_PAGE, 1, MAX_PER_PAGE),
    )


def repo(value: str, name: str = "repo") -> str:
    if not REPO.match(value):
        raise BadParameter(name, "a repository as owner/name")
    return value


def series_name(args: MultiDict[str, str], name: str) -> str | None:
    value = args.get(name, "").strip()
    if not value:
        return None
    if not NAME.match(value):
        raise BadParameter(name, "a suite or metric name (letters, digits, . _ : / @ + -)")
    return value


def points(args: MultiDict[str, str]) -> int:
    return clamped(args, "points", DEFAULT_POINTS, MIN_POINTS, MAX_POINTS)


def dates(args: MultiDict[str, str]) -> tuple[datetime | None, datetime | None]:
    """``since`` (inclusive) and ``until`` (a day is included whole)."""
    since = _date(args, "since", end=False)
    until = _date(args, "until", end=True)
    if since and until and since >= until:
        raise BadParameter("until", "a date after since")
    return since, until


def clamped(args: MultiDict[str, str], name: str, default: int, low: int, high: int) -> int:
    text = args.get(name, "").strip()
    if not text:
        return default
    if not re.fullmatch(r"[+-]?\d{1,30}", text):
        raise BadParameter(name, "a whole number")
    return min(high, max(low, int(text)))


def _date(args: MultiDict[str, str], name: str, end: bool) -> datetime | None:
    text = args.get(name, "").strip()
    if not text:
        return None
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            day = datetime.combine(date.fromisoformat(text), time(), tzinfo=UTC)
            return day + timedelta(days=1) if end else day
        if len(text) > 40:
            raise ValueError(text)
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (ValueError, OverflowError):
        raise BadParameter(name, "a date like 2026-03-01 or a time like 2026-03-01T12:00:00Z") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _values(args: MultiDict[str, str], name: str) -> list[str]:
    values = [v.strip() for v in args.getlist(name) if v.strip()]
    if len(values) > MAX_VALUES:
        raise BadParameter(name, f"at most {MAX_VALUES} values")
    return values


def _choices(args: MultiDict[str, str], name: str, allowed: tuple[str, ...]) -> tuple[str, ...]:
    values = _values(args, name)
    for value in values:
        if value not in allowed:
            raise BadParameter(name, f"one of {', '.join(allowed)}")
    return tuple(dict.fromkeys(values))


def _choice(args: MultiDict[str, str], name: str, allowed: tuple[str, ...], default: str) -> str:
    value = args.get(name, "").strip() or default
    if value not in allowed:
        raise BadParameter(name, f"one of {', '.join(allowed)}")
    return value
