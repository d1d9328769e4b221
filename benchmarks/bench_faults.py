"""The fault scenarios of tests/faults at full size: thousands of deliveries at a steady rate
while a consumer, the whole server, PostgreSQL or Redis is killed or restarted, GitHub fails in
every way it does, the disk fills up or the files become immutable, or slow clients hold 64
connections. Prints, per scenario: sent, acknowledged, refused (503), unanswered, processed, lost,
doubled and the time to recover, and the load average it ran under. PASS when nothing
acknowledged was lost or done twice (and, with slow clients, every delivery and /healthz was
answered within 1 s).

    .venv/bin/python benchmarks/bench_faults.py                      # every scenario, full size
    .venv/bin/python benchmarks/bench_faults.py --only killed --count 2000 --rate 50
    .venv/bin/python benchmarks/bench_faults.py --only slow-clients --held 64

Root is needed for the disk-full scenario (a tmpfs) and the immutable-files one (chattr);
PostgreSQL's server binaries and redis-server for the restarts (each scenario starts its own).
"""

from __future__ import annotations

import argparse
import http.client
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support import fault_scenarios as scenarios  # noqa: E402
from tests.support import github_data  # noqa: E402
from tests.support.faults import (  # noqa: E402
    Deliveries,
    Server,
    Stream,
    installation_deliveries,
    judge,
    perfbot_env,
    terminate,
)
from tests.support.github_emulator import GitHubEmulator  # noqa: E402
from tests.web.slow_clients import TRICKLE_S, SlowClients  # noqa: E402

STREAMS = ("killed", "restarted", "disk", "immutable")
ALL = ("mid-job", *STREAMS, "github", "credentials", "slow-clients")
ANSWER_S = 1.0  # the slow-clients target: every delivery and /healthz answered within this


class HealthTimes:
    """`/healthz` asked every 0.25 s from a thread, each on a new connection: how long each answer
    took (None: no answer within 10 s)."""

    def __init__(self, base: str):
        self.host, port = base.removeprefix("http://").split(":")
        self.port = int(port)
        self.times: list[float | None] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> HealthTimes:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _poll(self) -> None:
        while not self._stop.wait(0.25):
            asked = time.monotonic()
            try:
                connection = http.client.HTTPConnection(self.host, self.port, timeout=10)
                connection.request("GET", "/healthz")
                ok = connection.getresponse().status == 200
                connection.close()
            except (OSError, http.client.HTTPException):
                ok = False
            self.times.append(time.monotonic() - asked if ok else None)


def _spread(times: list[float]) -> str:
    if not times:
        return "none"
    ordered = sorted(times)
    at = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return f"p50 {at(0.5) * 1000:.1f} ms, p99 {at(0.99) * 1000:.1f} ms, max {ordered[-1] * 1000:.1f} ms"


def slow_clients(workdir: Path, count: int, rate: float, held: int) -> tuple[str, bool]:
    """`perfbot serve` (its defaults: one worker of 8 threads) while ``held`` slow connections stay
    open: idle ones, ones stopped inside their headers and ones trickling a body, a byte a second
    each, every one the server closes opened again at once. Meanwhile ``count`` signed deliveries
    at ``rate`` and /healthz every 0.25 s: how long each took to be answered (from its scheduled
    time; GitHub gives up after 10 s), what became of the deliveries, and how long the server
    takes to stop with the slow connections still held."""
    server = Server(workdir, perfbot_env()).start()
    deliveries = Deliveries(f"sqlite:///{workdir / 'perfbot.db'}")
    try:
        with SlowClients(server.base, held) as attack:
            time.sleep(2 * TRICKLE_S)  # every slow connection open and trickling
            with HealthTimes(server.base) as health:
                stream = Stream([server.base], installation_deliveries(count), rate).start()
                stream.join()
            figures = judge(f"slow clients ({held} held)", stream, deliveries, time.monotonic())
            still_held, opened, closed = attack.held(), attack.tally.opened, attack.tally.closed_by_server
            answers = attack.tally.answers.items()
            closings = ", ".join(f"{n} after {a!r}" for a, n in answers) or "nothing answered"
            stopping = time.monotonic()
            stopped = terminate(server.process)
            stop_s = time.monotonic() - stopping
    finally:
        server.stop()
        deliveries.close()
    answered = [s.answered - s.scheduled for s in stream.sent if s.status]
    healthy = [t for t in health.times if t is not None]
    figures.notes += [
        f"deliveries answered {len(answered)} of {len(stream.sent)}, {_spread(answered)}",
        f"/healthz {len(healthy)} of {len(health.times)} answered, {_spread(healthy)}",
        f"slow connections held {still_held} at the end, {opened} opened, {closed} closed by the server "
        f"({closings})",
        f"stopped (exit {stopped}) in {stop_s:.1f} s with them held",
    ]
    on_time = (
        len(answered) == len(stream.sent)
        and max(answered, default=0) < ANSWER_S
        and len(healthy) == len(health.times)
        and max(healthy, default=0) < ANSWER_S
    )
    return figures.line(), on_time and figures.lost == figures.doubled == 0 and stopped == 0


def app_key() -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return (
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode(),
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode(),
    )


def run(name: str, count: int, rate: float, workdir: Path, held: int = 64) -> tuple[str, bool]:
    if name == "slow-clients":
        return slow_clients(workdir, count, rate, held)
    if name == "mid-job":
        emulator = GitHubEmulator().start()
        try:
            found = scenarios.consumer_killed_mid_job(emulator, app_key(), workdir)
        finally:
            emulator.stop()
        return found.line(), (found.comments, found.checks, found.dispatches) == (1, 1, 1) and max(
            found.review_s, found.dispatch_s
        ) < 60
    if name == "github":
        emulator = GitHubEmulator().start()
        try:
            figures = scenarios.github_faults(emulator, app_key(), workdir, reviews=max(6, count // 50))
        finally:
            emulator.stop()
    elif name == "credentials":
        _, figures = scenarios.without_credentials(workdir, count=10)
        return figures.line(), "failed at once (1 attempt) 10" in figures.line()
    else:
        scenario = {
            "killed": scenarios.killed_mid_stream,
            "restarted": scenarios.services_restarted,
            "disk": scenarios.disk_full,
            "immutable": scenarios.files_immutable,
        }[name]
        figures = scenario(workdir, count=count, rate=rate)
        if figures is None:
            return f"{name}: skipped (needs root)", True
    return figures.line(), figures.lost == figures.doubled == 0 and figures.processed == figures.acknowledged


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=ALL, action="append", help="run only these scenarios")
    parser.add_argument("--count", type=int, default=2000, help="deliveries per stream (default 2000)")
    parser.add_argument("--rate", type=float, default=50.0, help="deliveries per second (default 50)")
    parser.add_argument(
        "--held", type=int, default=64, help="slow connections held in the slow-clients scenario (default 64)"
    )
    args = parser.parse_args()
    github_data.ensure()
    ok = True
    for name in args.only or ALL:
        before = os.getloadavg()
        with tempfile.TemporaryDirectory() as tmp:
            line, passed = run(name, args.count, args.rate, Path(tmp), args.held)
        after = os.getloadavg()
        verdict = "ok" if passed else "FAILED"
        print(f"{line}\n  load average {before[0]:.2f} before, {after[0]:.2f} after; {verdict}", flush=True)
        ok = ok and passed
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
