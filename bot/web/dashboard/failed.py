"""`GET /deliveries/failed`: the deliveries perfbot gave up on, for a signed-in maintainer of
their repositories: when, which event, why (the kind and the error) and after how many attempts.
An anonymous viewer gets a page asking to sign in (401), or, where sign-in is not configured, one
saying how to configure it (404); `/healthz` counts failures for everyone else."""

from __future__ import annotations

from flask import Blueprint, render_template
from flask.typing import ResponseReturnValue

from bot.service.dashboard import deliveries

from .. import state
from . import viewer

bp = Blueprint("failed_deliveries", __name__, template_folder="templates")


@bp.get("/deliveries/failed")
def failed() -> ResponseReturnValue:
    login = viewer.current().login
    if login is None:
        configured = state.current().services.sign_in is not None
        return render_template("failed_signin.html", nav="failed"), 401 if configured else 404
    found = deliveries.failed_for(state.current().services, login)
    return render_template("failed_deliveries.html", nav="failed", found=found)
