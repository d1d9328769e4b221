"""What GitHub and a load balancer see while another process holds a SQLite file's write lock, as
a backup or a `sqlite3` shell inside BEGIN IMMEDIATE does: `perfbot serve` on its embedded defaults
(SQLite store and queue) gets a delivery a second and `/healthz` is asked every second while the
database, then the queue's file, is locked for ``--hold`` seconds (longer than the 10 s GitHub
waits for an answer). Prints, per file: the answers to the deliveries (status: count; 0 is no
answer within GitHub's 10 s), the median and slowest answer, what `/healthz` answered and how
fast, and whether every acknowledged delivery was processed once the lock was let go.

    .venv/bin/python benchmarks/bench_locked_files.py
    .venv/bin/python benchmarks/bench_locked_files.py --tree /path/to/another/checkout   # its server
"""

from __future__ import annotations

import argparse
import collections
import http.client
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support import github_data  # noqa: E402
from tests.support.faults import Deliveries, Server, Stream, installation_deliveries, judge, perfbot_env  # noqa: E402
from tests.support.sqlite_locks import GITHUB_TIMEOUT_S, write_locked  # noqa: E402


def healthz(base: str) -> tuple[int, str, float]:
    """(HTTP status, the answer's status, seconds); status 0 when no answer came within GitHub's timeout."""
    host, port = base.removeprefix("http://").split(":")
    started = time.monotonic()
    try:
        connection = http.client.HTTPConnection(host, int(port), timeout=GITHUB_TIMEOUT_S)
        connection.request("GET", "/healthz")
        response = connection.getresponse()
        body = json.loads(response.read() or b"{}")
        connection.close()
        return response.status, str(body.get("status")), time.monotonic() - started
    except (OSError, http.client.HTTPException, ValueError):
        return 0, "no answer", time.monotonic() - started


def seconds(values: list[float]) -> str:
    return f"median {statistics.median(values):.2f} s, slowest {max(values):.2f} s" if values else "none"


def measure(workdir: Path, locked: str, hold_s: float, tree: Path | None) -> str:
    env = perfbot_env(**({"PYTHONPATH": str(tree)} if tree else {}))
    server = Server(workdir, env).start()
    deliveries = Deliveries(f"sqlite:///{workdir / 'perfbot.db'}")
    polls: list[tuple[int, str, float]] = []
    try:
        with write_locked(workdir / locked, hold_s=hold_s + 60):
            stream = Stream([server.base], installation_deliveries(int(hold_s)), rate=1.0).start()
            done = threading.Event()
            waiter = threading.Thread(target=lambda: (stream.join(), done.set()))
            waiter.start()
            while not done.wait(1.0):
                polls.append(healthz(server.base))
            waiter.join()
        figures = judge(f"{locked} locked", stream, deliveries, time.monotonic())
    finally:
        server.stop()
        deliveries.close()
    answers = collections.Counter(s.status for s in stream.sent)
    answered = [s.answered - s.scheduled for s in stream.sent if s.status]
    health = collections.Counter(f"{status} {said}" for status, said, _ in polls)
    health_s = seconds([p[2] for p in polls])
    return (
        f"{locked} locked for {hold_s:.0f} s: deliveries {dict(sorted(answers.items()))} "
        f"(answered in {seconds(answered)}); /healthz {dict(health)} (in {health_s}); "
        f"after: acknowledged {figures.acknowledged}, processed {figures.processed}, lost {figures.lost}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hold", type=float, default=20.0, help="seconds each file stays locked (20)")
    parser.add_argument("--tree", type=Path, help="run the server of this source tree instead of this one")
    args = parser.parse_args()
    github_data.ensure()
    for locked in ("perfbot.db", "perfbot.queue.db"):
        with tempfile.TemporaryDirectory() as tmp:
            print(measure(Path(tmp), locked, args.hold, args.tree), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
