"""The dashboard's JSON API (`/api/v1/...`): every page's data, and triage. Documented in
docs/dashboard.md; the pages render the same service calls."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify, request, url_for
from flask_wtf.csrf import generate_csrf
from werkzeug.datastructures import MultiDict
from werkzeug.exceptions import NotFound, Unauthorized

from bot.core.config import suite_kinds
from bot.core.config.suite_kinds.base import SuiteKind
from bot.service.dashboard import calibration as calibrations
from bot.service.dashboard import history as histories
from bot.service.dashboard import triage as triages
from bot.service.ports.dashboard import MergeDetail, MergePage, SeriesKey

from .. import state
from . import params, viewer

bp = Blueprint("dashboard_api", __name__, url_prefix="/api/v1")
bp.record_once(params.install_converters)


@bp.get("/merges")
def merges() -> Response:
    page = state.current().services.store.dashboard.flagged_merges(
        params.merge_query(request.args, viewer.visible())
    )
    return jsonify(page_dict(page, "dashboard_api.merges"))


@bp.get("/merges/<owner>/<name>/<pr_number:number>")
def merge(owner: str, name: str, number: int) -> Response:
    return jsonify(detail_dict(detail(owner, name, number)))


@bp.post("/merges/<owner>/<name>/<pr_number:number>/triage")
def triage(owner: str, name: str, number: int) -> tuple[Response, int]:
    login = viewer.current().login
    if login is None:
        raise Unauthorized("sign in to triage")
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        return jsonify({"message": "expected a JSON object: {state, fixed_by, note}"}), 400
    repo = params.repo(f"{owner}/{name}")
    fixed_by, note = body.get("fixed_by"), body.get("note", "")
    if not (fixed_by is None or (isinstance(fixed_by, int) and not isinstance(fixed_by, bool))):
        return jsonify({"message": "fixed_by: expected a pull request number"}), 400
    if not isinstance(note, str) or not isinstance(body.get("state"), str):
        return jsonify({"message": "state and note: expected strings"}), 400
    detail(owner, name, number)  # 404 for what the viewer may not see
    try:
        event = triages.triage(state.current().services, login, repo, number, body["state"], fixed_by, note)
    except triages.TriageRefused as refused:
        return jsonify({"message": str(refused)}), refused.status
    return jsonify(event.to_dict()), 201


@bp.get("/series")
def series() -> Response:
    keys = state.current().services.store.dashboard.series_keys(viewer.visible())
    wanted = [params.repo(v) for v in request.args.getlist("repo")]
    return jsonify({"series": [k.to_dict() for k in keys if not wanted or k.repo in wanted]})


@bp.get("/history")
def history() -> Response:
    key = series_key()
    since, until = params.dates(request.args)
    found = histories.history(state.current().services.store, key, since, until, params.points(request.args))
    return jsonify(found.to_dict())


@bp.get("/calibration")
def calibration() -> Response:
    overall, per_repo = calibrations.calibration(state.current().services.store, viewer.visible())
    wanted = [params.repo(v) for v in request.args.getlist("repo")]
    repositories = {r: c.to_dict() for r, c in per_repo.items() if not wanted or r in wanted}
    return jsonify({"all": overall.to_dict(), "repositories": repositories})


@bp.get("/me")
def me() -> Response:
    """Who the session belongs to, and the CSRF token a signed-in client sends as X-CSRFToken."""
    who = viewer.current()
    settings = state.current().settings
    body: dict[str, Any] = {"login": who.login, "sign_in": settings.sign_in_enabled}
    if who.login is not None:
        body["csrf_token"] = generate_csrf()
    return jsonify(body)


def detail(owner: str, name: str, number: int) -> MergeDetail:
    repo = params.repo(f"{owner}/{name}")
    found = (
        state.current().services.store.dashboard.merge_detail(repo, number) if viewer.may_see(repo) else None
    )
    if found is None:
        raise NotFound(f"{repo}#{number} is not a merge on this dashboard")
    return found


def series_key() -> SeriesKey:
    """The series named by repo, suite and metric, or by series=REPO|SUITE|METRIC (the history
    page's list); the first series the viewer may see when none is named."""
    args = request.args
    if args.get("series"):
        parts = args["series"].split("|")
        if len(parts) != 3:
            raise params.BadParameter("series", "REPO|SUITE|METRIC")
        args = MultiDict({"repo": parts[0], "suite": parts[1], "metric": parts[2]})
    named = args.get("repo", "").strip()
    repo = params.repo(named) if named else None
    suite, metric = params.series_name(args, "suite"), params.series_name(args, "metric")
    if repo and suite and metric and viewer.may_see(repo):  # the common case: one indexed row
        found = state.current().services.store.dashboard.series_key(repo, suite, metric)
        if found is not None:
            return found
    keys = state.current().services.store.dashboard.series_keys(viewer.visible())
    for key in headline_first(keys):
        if (repo in (None, key.repo)) and suite in (None, key.suite) and metric in (None, key.metric):
            return key
    raise NotFound("no such series on this dashboard")


def headline_first(keys: list[SeriesKey]) -> list[SeriesKey]:
    """``keys`` with the headline metrics first, so that a history named by nothing (or by its
    repository or suite only) opens on what a verdict is about, not on the first diagnostic metric
    in alphabetical order: first the metric a suite kind of the series' suite's name declares its
    headline, then any kind's headline, then the primary metrics, then the rest, each in the order
    given."""
    return sorted(keys, key=_headline_rank)


def _headline_rank(key: SeriesKey) -> int:
    kind = suite_kinds.get(key.suite)
    if kind is not None and _role(kind, key.metric) == "headline":
        return 0
    roles = {_role(k, key.metric) for k in map(suite_kinds.get, suite_kinds.names()) if k is not None}
    return 1 if "headline" in roles else 2 if "primary" in roles else 3


def _role(kind: type[SuiteKind], metric: str) -> str | None:
    found = kind.metrics.get(metric)
    return found.declared.role if found is not None and not found.retired else None


def page_dict(page: MergePage, endpoint: str) -> dict[str, Any]:
    def link(number: int) -> str | None:
        if not 1 <= number <= page.pages:
            return None
        query = params.query_args(request.args)
        query["page"] = [str(number)]
        return url_for(endpoint, **query)

    return {
        "items": [m.to_dict() for m in page.items],
        "total": page.total,
        "page": page.page,
        "per_page": page.per_page,
        "pages": page.pages,
        "links": {
            "self": link(page.page) or request.full_path,
            "next": link(page.page + 1),
            "prev": link(page.page - 1),
        },
    }


def detail_dict(found: MergeDetail) -> dict[str, Any]:
    return {
        **found.merge.to_dict(),
        "reasons": found.reasons,
        "results": [r.to_dict() for r in found.results],
        "acks": [a.to_dict() for a in found.acks],
        "triage_history": [t.to_dict() for t in found.triage],
        "attempts": [a.to_dict() for a in found.attempts],
    }
