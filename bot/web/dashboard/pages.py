"""The dashboard's pages, rendered on the server: flagged merges (`/`), a merge's detail and
triage, metric history with change points, and the calibration of the alerts. Each page's data
is the same service call as its JSON API route."""

from __future__ import annotations

import hashlib
import re
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from flask import Blueprint, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from werkzeug.exceptions import HTTPException

from bot.core import vocabulary
from bot.service.dashboard import calibration as calibrations
from bot.service.dashboard import history as histories
from bot.service.dashboard import triage as triages
from bot.service.dashboard.history import History
from bot.service.ports.dashboard import LEVELS, SORTS, STATES, TRIAGE_STATES, VERDICTS, MergeDetail

from .. import state
from . import api, config_notes, params, viewer

bp = Blueprint(
    "dashboard",
    __name__,
    template_folder="templates",
    static_folder="static",
    static_url_path="/static/dashboard",
)
bp.record_once(params.install_converters)
STATE_LABELS = {
    "open": "open",
    "acknowledged": "acknowledged",
    "confirmed": "confirmed",
    "false_alarm": "false alarm",
    "reverted": "reverted",
    "fixed": "fixed",
}
_FIXED_BY = re.compile(r"^#?(\d{1,9})$")
_REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}")
_REASON = re.compile(r"^(?P<what>.*?) \[[^\]]*\](?: at (?P<where>.*))?$", re.DOTALL)


@bp.get("/")
def merges() -> str:
    query = params.merge_query(request.args, viewer.visible())
    page = state.current().services.store.dashboard.flagged_merges(query)
    return render_template(
        "merges.html",
        nav="merges",
        page=page,
        query=query,
        repos=_repos(),
        levels=LEVELS,
        verdicts=VERDICTS,
        states=STATES,
        sorts=SORTS,
        api_url=url_for("dashboard_api.merges", **params.query_args(request.args)),
    )


@bp.get("/dashboard")
def dashboard() -> ResponseReturnValue:
    return redirect(url_for("dashboard.merges", **params.query_args(request.args)), 308)


@bp.get("/merges/<owner>/<name>/<pr_number:number>")
def merge(owner: str, name: str, number: int) -> str:
    return _merge_page(api.detail(owner, name, number))


@bp.post("/merges/<owner>/<name>/<pr_number:number>/triage")
def triage(owner: str, name: str, number: int) -> ResponseReturnValue:
    found = api.detail(owner, name, number)
    login = viewer.current().login
    here = url_for("dashboard.merge", owner=owner, name=name, number=number)
    if login is None:
        return redirect(url_for("signin.start", next=here), 303)
    form = request.form
    fixed_text = form.get("fixed_by", "").strip()
    fixed = _FIXED_BY.match(fixed_text)
    if fixed_text and not fixed:
        return _merge_page(found, "the fixing pull request: a number like 1234"), 400
    try:
        triages.triage(
            state.current().services,
            login,
            found.merge.repo,
            number,
            form.get("state", ""),
            int(fixed[1]) if fixed else None,
            form.get("note", ""),
        )
    except triages.TriageRefused as refused:
        return _merge_page(found, str(refused)), refused.status
    return redirect(f"{here}#triage", 303)


@bp.get("/history")
def history() -> str:
    store = state.current().services.store
    keys = store.dashboard.series_keys(viewer.visible())
    found: History | None = None
    if keys:
        key = api.series_key()
        since, until = params.dates(request.args)
        found = histories.history(store, key, since, until, params.points(request.args))
    return render_template(
        "history.html",
        nav="history",
        keys=keys,
        history=found,
        plot=_chart(found, "history-chart") if found and found.points else None,
        api_url=url_for("dashboard_api.history", **params.query_args(request.args)),
    )


@bp.get("/calibration")
def calibration() -> str:
    overall, per_repo = calibrations.calibration(state.current().services.store, viewer.visible())
    return render_template(
        "calibration.html",
        nav="calibration",
        overall=overall,
        per_repo=per_repo,
        api_url=url_for("dashboard_api.calibration"),
    )


@bp.errorhandler(HTTPException)
def error(failure: HTTPException) -> tuple[str, int]:
    code = failure.code or 500
    return render_template("error.html", code=code, message=failure.description or failure.name), code


@bp.app_context_processor
def context() -> dict[str, Any]:
    return {
        "viewer": viewer.current(),
        "sign_in": state.current().services.sign_in is not None,
        "state_labels": STATE_LABELS,
        "triage_states": TRIAGE_STATES,
        "commit_url": commit_url,
        "file_url": file_url,
        "level_icons": vocabulary.LEVEL_ICONS,
        "verdict_icons": vocabulary.VERDICT_ICONS,
        "config_notes": config_notes.notes,  # called by base.html: only pages that show it ask the store
    }


def commit_url(repo: str, sha: str | None) -> str | None:
    """A commit's page on GitHub (None without a commit or for a name that is not owner/name)."""
    if not sha or not _REPO.fullmatch(repo) or not re.fullmatch(r"[0-9a-f]{7,64}", sha):
        return None
    return f"{state.current().settings.github_web_url}/{repo}/commit/{sha}"


def file_url(pull_url: str | None, reason: str | None) -> str | None:
    """Where a risk reason points in the pull request's *Files changed* (its file's diff), as the
    review's comment links it; None when the reason names no file or the pull request no page."""
    found = _REASON.match(reason or "")
    link = web_link(pull_url)
    if found is None or not found["where"] or link is None:
        return None
    path = found["where"].split(" in ")[0].rsplit(":", 1)[0].strip()
    if not path:
        return None
    return f"{link}/files#diff-{hashlib.sha256(path.encode()).hexdigest()}"


@bp.app_template_filter("pct")
def pct(change: float | None) -> str:
    return "—" if change is None else f"{change * 100:+.1f}%".replace("-", "−")


@bp.app_template_filter("when")
def when(moment: datetime | None) -> str:
    return "—" if moment is None else moment.strftime("%Y-%m-%d %H:%M UTC")


@bp.app_template_filter("brief")
def brief(reason: str | None) -> str:
    """A risk reason for a table cell: what fired and in which file (the rule and the full path
    are on the detail page)."""
    if not reason:
        return "—"
    found = _REASON.match(reason)
    if found is None:
        return reason
    where = (found["where"] or "").split(" in ")[0].rsplit("/", 1)[-1]
    return f"{found['what']} · {where}" if where else found["what"]


@bp.app_template_filter("web_link")
def web_link(url: str | None) -> str | None:
    """``url`` for an href when it is an http(s) address with a host; None for anything else
    (`javascript:`, `data:`, a relative path): the link is left out."""
    if not url:
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    return url if parts.scheme.lower() in ("https", "http") and parts.hostname else None


@bp.app_template_filter("short")
def short(sha: str | None) -> str:
    return (sha or "")[:10]


@bp.app_template_filter("num")
def num(value: float | None) -> str:
    return "—" if value is None else f"{value:.4g}"


@bp.app_template_global("url_with")
def url_with(**changes: Any) -> str:
    """This page's URL with some parameters changed (None removes one): pages, sorting."""
    query = params.query_args(request.args)
    for name, value in changes.items():
        if value is None:
            query.pop(name, None)
        else:
            query[name] = [str(value)]
    return url_for(request.endpoint or "dashboard.merges", **(request.view_args or {}), **query)


def _merge_page(found: MergeDetail, problem: str | None = None) -> str:
    merge = found.merge
    store = state.current().services.store
    around = histories.around(store, merge.repo, merge.merged_at) if merge.merged_at else []
    charts = [
        _chart(h, f"chart-{i}", merge.merged_at, merge.merge_sha) for i, h in enumerate(around) if h.points
    ]
    rounds = [_round_charts(r.comparison, f"rounds-{i}") for i, r in enumerate(found.results)]
    return render_template(
        "merge.html",
        nav="merges",
        detail=found,
        merge=merge,
        charts=charts,
        rounds=rounds,
        histories=[h for h in around if h.points],
        problem=problem,
        api_url=url_for(
            "dashboard_api.merge",
            owner=merge.repo.split("/")[0],
            name=merge.repo.split("/")[1],
            number=merge.number,
        ),
    )


def _chart(
    found: History, chart_id: str, marker: datetime | None = None, marker_sha: str | None = None
) -> dict[str, Any]:
    """What the chart script draws: times in seconds, values, change points and merge markers.

    A merge's marker stands on its merge commit's point where the history has one, not at the time
    it merged: the point is measured minutes later, after the merge's benchmark ran, so a marker
    at the merge time stood one point early (the culprit's marker before the point before the drop)
    and a click between them opened the neighbouring merge. A merge without a point keeps its time."""
    key = found.key
    pages = {m.merge_sha: _merge_url(m.repo, m.number) for m in found.merges if m.merge_sha}
    measured = {p.sha: int(p.measured_at.timestamp()) for p in found.points}

    def at(sha: str | None, when: datetime) -> int:
        return measured.get(sha, int(when.timestamp())) if sha else int(when.timestamp())

    return {
        "id": chart_id,
        "title": f"{key.repo} · {key.suite} · {key.metric}",
        "unit": key.unit,
        "better": key.better,
        "x": [int(p.measured_at.timestamp()) for p in found.points],
        "y": [p.value for p in found.points],
        "changes": [
            {
                "i": c.point.index,
                "direction": c.point.direction,
                "change": round(c.point.change, 4),
                "before": c.point.before,
                "after": c.point.after,
            }
            for c in found.changes
        ],
        "merges": [
            {
                "t": at(m.merge_sha, m.merged_at),
                "n": m.number,
                "level": m.level,
                "url": _merge_url(m.repo, m.number),
            }
            for m in found.merges
            if m.merged_at is not None
        ],
        # Where a click on each point goes: its merge's page where a flagged merge made the
        # commit, else the commit on GitHub.
        "links": [pages.get(p.sha) or commit_url(key.repo, p.sha) for p in found.points],
        "shas": [p.sha for p in found.points],
        "marker": at(marker_sha, marker) if marker else None,
    }


def _round_charts(comparison: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """The per-round charts a stored comparison carries (``charts``, `bot.core.render.chart`), the
    well-formed ones only: rows written before the charts existed have none."""
    found = comparison.get("charts")
    charts = []
    for i, c in enumerate(found[:5] if isinstance(found, list) else []):
        if isinstance(c, dict) and _drawable(c.get("labels"), c.get("base"), c.get("head")):
            change = c.get("change")
            charts.append(
                {
                    "id": f"{prefix}-{i}",
                    "labels": c["labels"],
                    "base": c["base"],
                    "head": c["head"],
                    "change": change if _number(change) else None,
                    **{key: str(c.get(key, "")) for key in ("metric", "unit", "better", "verdict")},
                }
            )
    return charts


def _merge_url(repo: str, number: int) -> str:
    owner, _, name = repo.partition("/")
    return url_for("dashboard.merge", owner=owner, name=name, number=number)


def _drawable(labels: object, base: object, head: object) -> bool:
    """Labels and two series of numbers (None: a failed round), all of one length."""
    if not (isinstance(labels, list) and isinstance(base, list) and isinstance(head, list)):
        return False
    same = len(labels) == len(base) == len(head) > 0
    return (
        same
        and all(isinstance(label, str) for label in labels)
        and all(v is None or _number(v) for v in [*base, *head])
    )


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _repos() -> list[str]:
    shown = viewer.visible()
    known = state.current().services.store.dashboard.repository_privacy()
    return sorted(r for r in known if shown is None or r in shown)
