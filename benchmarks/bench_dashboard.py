"""Benchmark the dashboard at scale: 10,000 flagged merges and 100,000 benchmark results in
PostgreSQL (a scratch database on PERFBOT_TEST_POSTGRES_URL, dropped afterwards).

Targets: the list page and the history API answer within 50 ms server time at the 95th
percentile; a page with everything it loads weighs at most 300 KB; change points of one
10,000-point series take at most 200 ms. Server time is measured in-process (Flask's test client:
routing, queries, rendering; no network), after one warm-up request per view.

    python benchmarks/bench_dashboard.py
    python benchmarks/bench_dashboard.py --rounds 400
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import create_engine, func, select, text  # noqa: E402

from bot.adapters.store.sql import SqlStore  # noqa: E402
from bot.adapters.store.tables import BenchResultRow, MergeRow, MetricPointRow  # noqa: E402
from bot.bootstrap import build  # noqa: E402
from bot.core.history import changepoints  # noqa: E402
from bot.settings import Settings  # noqa: E402
from bot.web.app import create_app  # noqa: E402
from tests.support import dashboard_data  # noqa: E402

REPO = dashboard_data.REPOS[0]
LIST_VIEWS = [
    "/",
    "/?level=high",
    "/?verdict=regression",
    "/?state=open&level=high",
    f"/?repo={REPO}",
    "/?sort=risk",
    "/?sort=change&order=asc",
    "/?page=150",
    "/?since=2026-02-01&until=2026-02-28",
    "/?verdict=regression&state=confirmed&level=high&level=medium",
]
HISTORY_VIEWS = [
    f"/api/v1/history?repo={REPO}&suite=verify-step&metric=step_ms",
    f"/api/v1/history?repo={REPO}&suite=decode&metric=throughput",
    f"/api/v1/history?repo={dashboard_data.REPOS[1]}&suite=verify-step&metric=step_ms&since=2026-02-01",
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=300, help="requests per kind of view (default 300)")
    parser.add_argument("--merges-per-repo", type=int, default=7_700)
    parser.add_argument("--results-per-merge", type=float, default=12.0)
    args = parser.parse_args()
    admin_url = os.environ.get("PERFBOT_TEST_POSTGRES_URL")
    if not admin_url:
        print("bench_dashboard: error: PERFBOT_TEST_POSTGRES_URL is not set (.ci/run starts PostgreSQL)")
        return 2
    name = f"perfbot_bench_{uuid.uuid4().hex[:8]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    url = admin.url.set(database=name).render_as_string(hide_password=False)
    try:
        run(url, args)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
    return 0


def run(url: str, args: argparse.Namespace) -> None:
    store = SqlStore.connect(url)
    started = time.perf_counter()
    summary = dashboard_data.fill(
        store.engine,
        repos=4,
        merges_per_repo=args.merges_per_repo,
        results_per_merge=args.results_per_merge,
        points_per_merge=2,
        private=False,
    )
    print(f"filled in {time.perf_counter() - started:.1f} s")
    started = time.perf_counter()
    store.dashboard.sync()
    folded = time.perf_counter() - started
    print(f"first read folded {summary.results:,} results into the merges in {folded:.1f} s")
    with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        # What autovacuum does after a bulk load: statistics, and the visibility map that lets
        # the list's counts read the covering index alone.
        for table in ("merges", "bench_results", "metric_points", "acks", "metric_series"):
            connection.execute(text(f"VACUUM ANALYZE {table}"))
        flagged = connection.scalar(select(func.count()).select_from(MergeRow).where(MergeRow.flagged))
        results = connection.scalar(select(func.count()).select_from(BenchResultRow))
        points = connection.scalar(select(func.count()).select_from(MetricPointRow))
    print(
        f"data: {summary.merges:,} merges, {flagged:,} flagged, {results:,} results, {points:,} metric points"
    )
    store.engine.dispose()

    settings = Settings(
        webhook_secrets=("bench",),
        database_url=url,
        queue_url="sqlite:///:memory:",
        dashboard_anonymous="all",
    )
    runtime = build(settings)
    client = create_app(settings, runtime.services).test_client()
    print()
    print("| view | requests | p50 | p95 | max | target |")
    print("|---|---:|---:|---:|---:|---:|")
    report(client, "list page `/` (10 filter/sort/page variants)", LIST_VIEWS, args.rounds)
    report(
        client,
        "list API `/api/v1/merges`",
        [v.replace("/?", "/api/v1/merges?") if "?" in v else "/api/v1/merges" for v in LIST_VIEWS],
        args.rounds,
    )
    report(client, "history API `/api/v1/history` (1,000 points + change points)", HISTORY_VIEWS, args.rounds)
    detail = f"/merges/{REPO}/{1000 + args.merges_per_repo // 3}"
    report(client, "merge detail page", [detail], args.rounds // 3, target=None)
    report(client, "history API, 10,000 points", [HISTORY_VIEWS[0] + "&points=10000"], 30, target=None)
    print()
    print("| page | HTML | with its CSS and scripts | target |")
    print("|---|---:|---:|---:|")
    pages = (
        ("flagged merges `/`", "/"),
        ("merge detail", detail),
        ("history", f"/history?series={REPO}|verify-step|step_ms"),
        ("calibration", "/calibration"),
    )
    for label, path in pages:
        html, total = weigh(client, path)
        print(f"| {label} | {html / 1024:.0f} KB | **{total / 1024:.0f} KB** | <= 300 KB |")
    values = [
        p.value for p in runtime.store.dashboard.series(REPO, "verify-step", "step_ms", None, None, 10_000)
    ]
    times = []
    for _ in range(15):
        started = time.perf_counter()
        found = changepoints.detect(values, "lower")
        times.append(time.perf_counter() - started)
    print()
    print(
        f"change points of one {len(values):,}-point series: "
        f"median {statistics.median(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms "
        f"({len(found)} found; target <= 200 ms)"
    )
    runtime.close()


def report(client, label: str, paths: list[str], rounds: int, target: str | None = "<= 50 ms (p95)") -> None:
    for path in paths:  # warm-up: connections, templates, the first fold-in
        assert client.get(path).status_code == 200, path
    times = []
    for i in range(rounds):
        path = paths[i % len(paths)]
        started = time.perf_counter()
        answer = client.get(path)
        times.append((time.perf_counter() - started) * 1000)
        assert answer.status_code == 200, (path, answer.status_code)
    times.sort()
    p95 = times[int(0.95 * (len(times) - 1))]
    print(
        f"| {label} | {rounds} | {statistics.median(times):.1f} ms | **{p95:.1f} ms** | "
        f"{times[-1]:.1f} ms | {target or '-'} |"
    )


def weigh(client, path: str) -> tuple[int, int]:
    """The page's bytes, and with every stylesheet and script it references from this server."""
    import re

    answer = client.get(path)
    html = answer.get_data()
    total = len(html)
    for asset in set(re.findall(rb'(?:href|src)="(/static/[^"]+)"', html)):
        total += len(client.get(asset.decode()).get_data())
    return len(html), total


if __name__ == "__main__":
    sys.exit(main())
