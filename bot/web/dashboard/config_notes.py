"""The banner of a repository whose `.github/perfbot.yml` perfbot could not read whole: each invalid
key (with its "did you mean", where one is close), and that the runs perfbot starts on its own are
held until the file is fixed. Shown on the pages of that repository, and on the pages of every
repository (the list unfiltered, the calibration, the regressions) for each the viewer may see.

The problems are what the store kept from perfbot's last read of the file (`repo_config.read`)."""

from __future__ import annotations

from flask import request
from werkzeug.exceptions import HTTPException

from bot.service.records import RepoConfigProblems

from .. import state
from . import params, viewer


def notes() -> list[RepoConfigProblems]:
    """The config problems of the repositories this page is about that the viewer may see."""
    reader = state.current().services.store.config_problems
    try:
        shown = viewer.visible()
    except HTTPException:  # a page for a viewer who may see nothing (the 401 page itself)
        return []
    about = _repos_of_page()
    if about is not None:
        return reader.current([r for r in about if shown is None or r in shown])
    return reader.current(shown)


def _repos_of_page() -> set[str] | None:
    """The repositories the page is scoped to (a merge's, the list's ?repo= filter, a series'),
    None for a page of every repository."""
    view_args = request.view_args or {}
    if "owner" in view_args and "name" in view_args:
        return {f"{view_args['owner']}/{view_args['name']}"}
    # a name that is not owner/name is the page's own 400 to give; here it names nothing
    named = {
        v.strip() for v in request.args.getlist("repo")[: params.MAX_VALUES] if params.REPO.match(v.strip())
    }
    series = request.args.get("series", "").split("|")
    if len(series) == 3 and params.REPO.match(series[0]):
        named.add(series[0])
    return named or None
