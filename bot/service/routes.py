"""Every feature's router merged into the one the intake and the worker use."""

from . import installations, merges, review
from .router import Router

ROUTER = Router(review.router, merges.router, installations.router)
