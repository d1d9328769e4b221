"""The fault scenarios of tests/faults at full size: thousands of deliveries at a steady rate
while a consumer, the whole server, PostgreSQL or Redis is killed or restarted, GitHub fails in
every way it does, the disk fills up or the files become immutable, or slow clients hold 64
connections, or 64 stalled bodies of 25 MB press on the web worker and on `perfbot relay`
(`stalled-bodies`: their memory and threads). Prints, per scenario: sent, acknowledged, refused
(503), unanswered, processed, lost, doubled and the time to recover, and the load average it ran
under. PASS when nothing acknowledged was lost or done twice (and, with slow clients, every
delivery and /healthz was answered within 1 s; with stalled bodies, the memory they added stayed
under 400 MB for each listener and the relay's threads under 40).

    .venv/bin/python benchmarks/bench_faults.py                      # every scenario, full size
    .venv/bin/python benchmarks/bench_faults.py --only killed --count 2000 --rate 50
    .venv/bin/python benchmarks/bench_faults.py --only slow-clients --held 64
    .venv/bin/python benchmarks/bench_faults.py --only stalled-bodies --held 64

Root is needed for the disk-full scenario (a tmpfs) and the immutable-files one (chattr);
PostgreSQL's server binaries and redis-server for the restarts (each scenario starts its own).
"""

from __future__ import annotations

import argparse
import http.client
import os
import subprocess
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
    SECRET,  # noqa: E402
    Deliveries,
    Server,
    Stream,
    installation_deliveries,
    judge,
    perfbot_env,
    terminate,
)
from tests.support.github_emulator import GitHubEmulator  # noqa: E402
from tests.support.serving import PERFBOT, free_port  # noqa: E402
from tests.web.helpers import headers as signed_headers  # noqa: E402
from tests.web.slow_clients import TRICKLE_S, SlowClients  # noqa: E402

STREAMS = ("killed", "restarted", "disk", "immutable")
ALL = ("mid-job", *STREAMS, "github", "credentials", "slow-clients", "stalled-bodies")
ANSWER_S = 1.0  # the slow-clients target: every delivery and /healthz answered within this
# The stalled-bodies target: what 64 of them may add to the server's processes and to the relay
# (each holds 66 MB of bodies at most; the allocator keeps some of what churn frees, and gunicorn
# buffers up to 256 KB a connection: measured +333 MB and +206 MB, against +1,595 MB and +1,603 MB
# before the bounds) and the relay's threads (its pool of 32, and its own).
ADDED_MB = 400
RELAY_THREADS = 40
STALL_S = 15.0  # longer than the 10 s a body has: the attacker's reconnections are in it


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


def tree(pid: int) -> list[int]:
    """``pid`` and its descendants (from /proc)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        try:
            for task in Path(f"/proc/{current}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def status_field(pid: int, name: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{name}:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def rss_mb(pid: int) -> float:
    """The resident memory of ``pid`` and its descendants, in MB."""
    return sum(status_field(p, "VmRSS") for p in tree(pid)) / 1024


def stall(base: str, pid: int, held: int, deliver_to: str) -> tuple[float, float, int, str]:
    """``held`` bulk connections to ``base`` for `STALL_S`, signed pings to ``deliver_to`` every
    0.5 s meanwhile: (RSS before, peak RSS, peak threads of ``pid``, what the pings got)."""
    before = rss_mb(pid)
    peak, threads, got = before, 0, {}
    body = b'{"zen": "Keep it logically awesome.", "hook_id": 1}'
    host, port = deliver_to.removeprefix("http://").split("/")[0].split(":")
    with SlowClients(base, held, kinds=("bulk",)):
        end = time.monotonic() + STALL_S
        while time.monotonic() < end:
            peak = max(peak, rss_mb(pid))
            threads = max(threads, status_field(pid, "Threads"))
            connection = http.client.HTTPConnection(host, int(port), timeout=10)
            try:
                connection.request("POST", "/webhook", body, signed_headers("ping", body, secret=SECRET))
                status = str(connection.getresponse().status)
            except OSError as error:
                status = type(error).__name__
            finally:
                connection.close()
            got[status] = got.get(status, 0) + 1
            time.sleep(0.5)
    return before, peak, threads, ", ".join(f"{n}× {s}" for s, n in sorted(got.items()))


def stalled_bodies(workdir: Path, held: int) -> tuple[str, bool]:
    """`perfbot serve` (its defaults), then `perfbot relay` in front of it, each while ``held``
    connections announce 25 MB bodies, send all but the last byte as fast as they may and stall
    (reconnecting when closed): the memory they add to the server's processes and to the relay,
    the relay's threads, and what signed pings sent meanwhile got (200 answered, 503 told to come
    back)."""
    server = Server(workdir, perfbot_env()).start()
    relay_port = free_port()
    relay = subprocess.Popen(
        [*PERFBOT, "relay", "--listen", f"127.0.0.1:{relay_port}", "--to", f"{server.base}/webhook"],
        cwd=workdir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(2)  # the relay listening
        serve_before, serve_peak, _, serve_pings = stall(server.base, server.process.pid, held, server.base)
        relay_base = f"http://127.0.0.1:{relay_port}"
        relay_before, relay_peak, relay_threads, relay_pings = stall(relay_base, relay.pid, held, relay_base)
    finally:
        terminate(relay)
        server.stop()
    line = (
        f"stalled bodies ({held} held, 25 MB announced, all but a byte sent): perfbot serve "
        f"{serve_before:.0f} -> {serve_peak:.0f} MB (+{serve_peak - serve_before:.0f}), pings {serve_pings}; "
        f"perfbot relay {relay_before:.0f} -> {relay_peak:.0f} MB (+{relay_peak - relay_before:.0f}), "
        f"{relay_threads} threads at most, pings {relay_pings}"
    )
    bounded = serve_peak - serve_before < ADDED_MB and relay_peak - relay_before < ADDED_MB
    return line, bounded and relay_threads <= RELAY_THREADS


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
    if name == "stalled-bodies":
        return stalled_bodies(workdir, held)
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
        "--held",
        type=int,
        default=64,
        help="connections held in the slow-clients and stalled-bodies scenarios (default 64)",
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
