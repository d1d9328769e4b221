"""What the app's request handlers work with, set once by `create_app`: typed, not a bag."""

from __future__ import annotations

from dataclasses import dataclass

from flask import Flask, current_app

from bot.service.ports.sessions import SessionStore
from bot.service.router import Router
from bot.service.services import Services
from bot.settings import Settings

from .metrics import Metrics

_EXTENSION = "perfbot"


@dataclass(frozen=True)
class AppState:
    settings: Settings
    services: Services
    router: Router
    metrics: Metrics
    sessions: SessionStore | None = None  # the dashboard's signed-in sessions (None: no sign-in)


def install(app: Flask, state: AppState) -> None:
    app.extensions[_EXTENSION] = state


def current() -> AppState:
    """The state of the app handling the current request."""
    state: AppState = current_app.extensions[_EXTENSION]
    return state
