"""`GET /deliveries/failed`: the deliveries perfbot gave up on, for a signed-in maintainer of
their repositories: when, which event, why (the kind and the error) and after how many attempts.
Anonymous viewers are sent to sign in; `/healthz` counts failures for everyone else."""

from __future__ import annotations

from flask import Blueprint, abort, redirect, render_template, url_for
from flask.typing import ResponseReturnValue

from bot.service.dashboard import deliveries

from .. import state
from . import viewer

bp = Blueprint("failed_deliveries", __name__, template_folder="templates")


@bp.get("/deliveries/failed")
def failed() -> ResponseReturnValue:
    login = viewer.current().login
    if login is None:
        if state.current().services.sign_in is None:
            abort(404, "failed deliveries are shown to signed-in maintainers, and sign-in is not configured "
                       "on this server: /healthz counts them and the server's log has each one")
        return redirect(url_for("signin.start", next=url_for("failed_deliveries.failed")), 303)
    found = deliveries.failed_for(state.current().services, login)
    return render_template("failed_deliveries.html", nav="failed", found=found)
