"""Every feature's router merged into the one the intake and the worker use. Order matters within an
event: the review runs before the benchmark handlers that read its record."""

from . import bench, commands, installations, merges, review, runs
from .router import Router

ROUTER = Router(review.router, merges.router, installations.router, commands.router, bench.router,
                runs.router)
