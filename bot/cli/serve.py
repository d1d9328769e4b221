"""`perfbot serve` (webhook intake under gunicorn, and on the embedded SQLite queue the queue
consumer processes it supervises) and `perfbot worker` (a queue consumer on its own)."""

from __future__ import annotations

import argparse
import logging
import sys

from bot.errors import UserError

from .common import UsageError

log = logging.getLogger("perfbot.serve")


def setup(subparsers) -> None:
    serve = subparsers.add_parser(
        "serve",
        help="run the webhook server (and the queue consumer)",
        description="Serve POST /webhook, /healthz, /metrics and the dashboard "
        "with gunicorn. With the embedded SQLite queue (the default) "
        "it also starts the queue consumers, as processes of their "
        "own that it restarts if they die and stops with itself.",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
    serve.add_argument("--workers", type=int, default=1, help="gunicorn worker processes (default 1)")
    serve.add_argument("--threads", type=int, default=8, help="threads per worker process (default 8)")
    serve.add_argument(
        "--consumers",
        type=int,
        default=1,
        help="queue consumer processes on the embedded queue (default 1; none with Redis)",
    )
    serve.add_argument(
        "--consumer-threads", type=int, default=4, help="threads per queue consumer process (default 4)"
    )
    serve.add_argument(
        "--register-app",
        metavar="FILE",
        help="register perfbot's GitHub App from its manifest at /setup/app and write its "
        "settings to FILE (0600; the private key beside it); for a server not yet "
        "an App, so no webhook secret is needed yet",
    )
    serve.set_defaults(run=run_serve)
    worker = subparsers.add_parser(
        "worker",
        help="run the queue consumer only",
        description="Consume queued deliveries (PERFBOT_QUEUE_URL) until "
        "SIGTERM; run any number of these next to `perfbot serve`.",
    )
    worker.add_argument("--threads", type=int, default=4, help="consumer threads (default 4)")
    worker.add_argument(
        "--no-periodic",
        dest="periodic",
        action="store_false",
        help="leave the periodic tasks (the minutely sweep, the hourly scheduled "
        "benchmarks) to another worker: exactly one worker of a queue runs them",
    )
    worker.add_argument(
        "--stop-timeout",
        type=float,
        metavar="SECONDS",
        help="after SIGTERM, how long running jobs may take to finish (default 20); a job still "
        "running then is left pending for the next consumer to take over",
    )
    worker.set_defaults(run=run_worker)


def _settings():
    from bot.settings import Settings, SettingsError, check_sqlite_folder

    try:
        settings = Settings.from_env()
        check_sqlite_folder(settings.database_url)
    except SettingsError as error:
        raise UsageError(str(error)) from None
    return settings


def _warn_without_credentials(settings) -> None:
    """Said once the server is sure to start: before a mistake that stops it, it would only hide it."""
    if settings.mode == "none":
        log.warning(
            "no GitHub credentials (PERFBOT_APP_ID + PERFBOT_PRIVATE_KEY, or PERFBOT_GITHUB_TOKEN): "
            "deliveries are accepted but reviews cannot be published"
        )


def run_serve(args: argparse.Namespace) -> int:
    from bot.service import logs
    from bot.web import server

    if not 0 <= args.port <= 65535:
        raise UsageError("--port must be from 0 to 65535")
    for name in ("workers", "threads", "consumers", "consumer_threads"):
        if getattr(args, name) < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be positive")
    settings = _settings()
    logs.configure(settings.log_level)
    if args.register_app:
        settings = _registering(settings, args.register_app, args.host, args.port)
    elif not settings.webhook_secrets:
        raise UsageError("PERFBOT_WEBHOOK_SECRET is not set: it must match the App's webhook secret")
    _warn_without_credentials(settings)
    from bot.service.failures import SchemaNotMigrated, StorageUnavailable

    try:
        server.serve(
            settings, args.host, args.port, args.workers, args.threads, args.consumers, args.consumer_threads
        )
    except StorageUnavailable as error:  # at start-up, before anything was served
        log.error("perfbot serve cannot start: %s", error)
        return 1
    except SchemaNotMigrated as error:  # waiting would not help: exit 2, as for bad settings
        raise UserError(str(error)) from None
    return 0


def _registering(settings, file: str, host: str, port: int):
    """``settings`` that serve /setup/app and write the new App's settings to ``file``."""
    import dataclasses
    from pathlib import Path

    from bot.web import app_credentials, setup_code

    if settings.mode == "app":
        raise UsageError("--register-app: this server is an App already (PERFBOT_APP_ID is set)")
    env_file = Path(file).expanduser().absolute()
    problem = app_credentials.check_writable(env_file)
    if problem:
        raise UsageError(f"--register-app: {problem}")
    local = "localhost" if host in ("127.0.0.1", "0.0.0.0") else host  # nosec B104 - a name shown
    where = settings.public_url or f"http://{local}:{port}"
    log.info("register the GitHub App in a browser at %s/setup/app; its settings go to %s", where, env_file)
    # On the console only, never in the log: whoever has it may register the App (the web workers,
    # forked later, inherit it).
    print(f"perfbot: the registration code for {where}/setup/app is {setup_code.issue()}", file=sys.stderr)
    return dataclasses.replace(settings, register_app_to=str(env_file))


def run_worker(args: argparse.Namespace) -> int:
    from bot import bootstrap, collector, worker
    from bot.adapters.scoring_process import ScoringProcess
    from bot.service import logs
    from bot.service.failures import SchemaNotMigrated

    if args.threads < 1:
        raise UsageError("--threads must be positive")
    if args.stop_timeout is not None and not 0 <= args.stop_timeout < float("inf"):
        raise UsageError("--stop-timeout must be a number of seconds, 0 or more")
    settings = _settings()
    logs.configure(settings.log_level)
    _warn_without_credentials(settings)
    # Reviews score their diffs in a process of their own: on these threads, scoring would hold the
    # interpreter while another thread holds a SQLite writer lock that the intake waits for.
    scoring = ScoringProcess()
    try:
        runtime = worker.when_storage_is_there(lambda: bootstrap.build(settings, scoring_process=scoring))
    except SchemaNotMigrated as error:  # not tried again: waiting would not help
        raise UserError(str(error)) from None
    if runtime is None:  # told to stop while it waited
        return 0
    collector.tune_after_start()  # what it built is kept for its life
    try:
        scoring.start()
    except OSError as error:  # the first review tries again
        log.warning("could not start the scoring process yet: %s", error)
    stop_timeout_s = worker.STOP_TIMEOUT_S if args.stop_timeout is None else args.stop_timeout
    try:
        return worker.run_forever(
            runtime, workers=args.threads, periodic=args.periodic, stop_timeout_s=stop_timeout_s
        )
    finally:
        scoring.close()
