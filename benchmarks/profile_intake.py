"""Where a delivery's CPU goes, intake and processing profiled apart (cProfile), in one process on
SQLite files of its own: the intake is the Flask app called as gunicorn calls it (a WSGI environ
per delivery, no network), the processing is `jobs.process` as a consumer thread runs it. The
deliveries are GitHub's `installation_repositories.added` example (one new repository each) and,
separately, reviews of a ``--diff-lines`` PR served by the GitHub API emulator, which runs in a
process of its own (its CPU is not counted).

    .venv/bin/python benchmarks/profile_intake.py                 # 2,000 deliveries, 20 reviews
    .venv/bin/python benchmarks/profile_intake.py --top 40 --count 5000

It prints CPU per delivery for each part, measured without the profiler and then with it, and
each part's heaviest functions (cumulative time). `bench_webhook.py` measures the server as
GitHub sees it; this one says where its time goes.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import logging
import multiprocessing
import pstats
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from werkzeug.test import EnvironBuilder  # noqa: E402

from benchmarks.bench_webhook import TOKEN, run_emulator  # noqa: E402
from bot.bootstrap import build  # noqa: E402
from bot.service import jobs  # noqa: E402
from bot.settings import Settings  # noqa: E402
from bot.web.app import create_app  # noqa: E402
from tests.support import github_data  # noqa: E402
from tests.support.faults import SECRET, installation_deliveries, signed  # noqa: E402


def measure(name: str, run: Callable[[int], None], items: range, top: int) -> None:
    """CPU per item without the profiler (first half) and with it (second half), and the profile."""
    half = len(items) // 2
    started = time.process_time()
    for i in items[:half]:
        run(i)
    plain = (time.process_time() - started) * 1000 / max(1, half)
    profile = cProfile.Profile()
    started = time.process_time()
    profile.enable()
    for i in items[half:]:
        run(i)
    profile.disable()
    profiled = (time.process_time() - started) * 1000 / max(1, len(items) - half)
    print(
        f"\n== {name}: {plain:.3f} ms CPU per delivery ({profiled:.3f} ms under the profiler), "
        f"{len(items)} deliveries"
    )
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(top)
    print("\n".join(line for line in out.getvalue().splitlines() if line.strip())[:20_000])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--reviews", type=int, default=20)
    parser.add_argument("--diff-lines", type=int, default=5000)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    github_data.ensure()
    here, there = multiprocessing.get_context("spawn").Pipe()
    emulator = multiprocessing.get_context("spawn").Process(
        target=run_emulator, args=(there, args.reviews, args.diff_lines), daemon=True
    )
    emulator.start()
    api_url, shas = here.recv()
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            webhook_secrets=(SECRET,),
            database_url=f"sqlite:///{Path(tmp) / 'perfbot.db'}",
            github_token=TOKEN,
            github_api_url=api_url,
            log_level="INFO",
        )
        runtime = build(settings)
        app = create_app(settings, runtime.services)
        for handler in logging.getLogger("perfbot").handlers:  # formatted as in production, not shown
            handler.setStream(open("/dev/null", "w"))  # noqa: SIM115 - lives as long as the process
        warm = 200
        deliveries = installation_deliveries(warm + args.count)
        reviews = [
            (
                "pull_request",
                json.dumps(github_data.pull_request("synchronize", head_sha=sha, number=number)).encode(),
            )
            for number, sha in enumerate(shas, 1)
        ]

        def intake(i: int, sent=deliveries) -> None:
            event, body = sent[i]
            environ = EnvironBuilder(
                path="/webhook", method="POST", data=body, headers=signed(event, body, str(uuid.uuid4()))
            ).get_environ()
            answered: list[str] = []
            b"".join(app(environ, lambda status, headers: answered.append(status)))
            if not answered[0].startswith(("202", "200")):
                raise SystemExit(f"intake answered {answered[0]}")

        def process(delivery_id: int) -> None:
            jobs.process(delivery_id, runtime.services, runtime.router)

        for i in range(warm):
            intake(i)
            process(i + 1)
        measure("intake (installation_repositories)", intake, range(warm, warm + args.count), args.top)
        measure(
            "processing (installation_repositories)",
            process,
            range(warm + 1, warm + args.count + 1),
            args.top,
        )
        first_review = warm + args.count + 1
        measure(
            f"intake (pull_request, {args.diff_lines}-line diff)",
            lambda i: intake(i, reviews),
            range(len(reviews)),
            args.top,
        )
        measure(
            f"processing (review of a {args.diff_lines}-line diff)",
            process,
            range(first_review, first_review + len(reviews)),
            args.top,
        )
        runtime.close()
    here.send("stop")
    emulator.join(30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
