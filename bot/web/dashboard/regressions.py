"""`/regressions`: the regressions on the default branch (detected → bisecting → culprit
confirmed / not reproduced / out of budget), today's GPU budget of their repositories, and one
case's page; `/api/v1/regressions...` the same as JSON (`bot.service.dashboard.regressions`)."""

from __future__ import annotations

import re

from flask import Blueprint, Response, abort, jsonify, render_template, request, url_for

from bot.core.watch.cases import LABELS
from bot.service.dashboard import regressions

from .. import state
from . import viewer

bp = Blueprint("regressions", __name__, template_folder="templates")
_REPO = re.compile(r"^[A-Za-z0-9._-]{1,100}/[A-Za-z0-9._-]{1,100}$")
_SHA = re.compile(r"^[0-9a-f]{40}$")
_KEY = re.compile(r"^case-[0-9a-f]{32}$")


def _listing() -> regressions.Listing:
    repo, sha = request.args.get("repo") or None, request.args.get("sha") or None
    if (repo is not None and not _REPO.fullmatch(repo)) or (sha is not None and not _SHA.fullmatch(sha)):
        abort(400, "repo is owner/name and sha a full commit sha")
    return regressions.listing(state.current().services, viewer.visible(), repo, sha)


def _detail(key: str) -> regressions.CaseDetail:
    found = None
    if _KEY.fullmatch(key):
        found = regressions.detail(state.current().services, viewer.visible(), key)
    if found is None:
        abort(404, "no such regression case here")
    return found


@bp.get("/regressions")
def index() -> str:
    api_url = url_for(
        "regressions.index_json", repo=request.args.get("repo") or None, sha=request.args.get("sha") or None
    )
    return render_template(
        "regressions.html", nav="regressions", listing=_listing(), case_labels=LABELS, api_url=api_url
    )


@bp.get("/regressions/<key>")
def case(key: str) -> str:
    return render_template(
        "regression.html",
        nav="regressions",
        found=_detail(key),
        case_labels=LABELS,
        api_url=url_for("regressions.case_json", key=key),
    )


@bp.get("/api/v1/regressions")
def index_json() -> Response:
    return jsonify(_listing().to_dict())


@bp.get("/api/v1/regressions/<key>")
def case_json(key: str) -> Response:
    return jsonify(_detail(key).to_dict())
