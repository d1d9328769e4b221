"""Benchmark the webhook server as GitHub sees it, and a risk review end to end.

1. Intake under load, with reviews running meanwhile: `perfbot serve` on its embedded defaults
   (gunicorn, SQLite store and queue, the queue consumer it starts) on loopback receives signed
   deliveries with unique GUIDs at a fixed rate (open loop: latency is measured from each
   delivery's scheduled send time, so a stall is not hidden by the sender waiting). Most are
   GitHub's `installation_repositories.added` example with a unique repository each, so that
   every processed one leaves one row behind; one a second (``--review-rate``) is a
   `pull_request.synchronize` of its own PR whose review scores a 5,000-line diff served by the
   GitHub API emulator, which runs in a process of its own as GitHub would be another machine.
   Targets: p99 <= 10 ms at 200/s for 60 s, zero non-2xx, every delivery processed exactly once
   (one `done` row each, none attempted twice, one repository per installation delivery, one
   sticky comment per PR and one commit status per pushed head).
   ``--baseline DIR`` measures another source tree the same way, back to back (before/after).
2. Review end to end: a signed `pull_request.synchronize` for a 5,000-line PR, from the POST to
   the sticky comment recorded by the GitHub API emulator (every request validated against
   GitHub's REST description). Target: p50 <= 1 s.

How to run, from the repository root with the test install (`make install`), on a machine with
nothing else running (each layout prints the load average before and after its load and the share
of the CPUs other processes took meanwhile, so that a noisy figure shows as one):

    .venv/bin/python benchmarks/bench_webhook.py       # both parts, 200/s for 60 s
    .venv/bin/python benchmarks/bench_webhook.py --rate 100 --seconds 10 --reviews 5   # a quick look

Before and after in one run: ``--baseline`` takes a source tree where `perfbot serve` still ran
the queue consumer on threads of its web process, the parent of the commit that moved it out:

    before=$(git log -1 --format=%H --grep='consumers as supervised processes')~1
    mkdir -p /tmp/before && git archive "$before" | tar -x -C /tmp/before
    .venv/bin/python benchmarks/bench_webhook.py --baseline /tmp/before

Per layout it prints p50/p95/p99/max intake latency, deliveries sent, accepted and processed,
lost and doubled, reviews saved, sticky comments per PR, commit statuses per head, CPU per
delivery, how long the queue took to drain and the machine's load; then PASS or FAIL against
this checkout's targets (the baseline's figures are for comparison only).
"""

from __future__ import annotations

import argparse
import collections
import copy
import http.client
import json
import multiprocessing
import os
import queue
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.web.signature import sign  # noqa: E402
from tests.support import github_data  # noqa: E402
from tests.support.github_emulator import GitHubEmulator, wait_for  # noqa: E402

SECRET = "bench-secret"
TOKEN = "ghp_bench_token"
REPO = "Codertocat/Hello-World"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(
    workdir: Path,
    extra_env: dict[str, str],
    workers: int = 1,
    source: Path = ROOT,
    serve_args: tuple[str, ...] = (),
) -> tuple[subprocess.Popen, str]:
    """`perfbot serve` of the perfbot source tree ``source`` (this checkout by default), with
    ``serve_args`` added to its command line."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERFBOT_")}
    env.update(PERFBOT_WEBHOOK_SECRET=SECRET, PERFBOT_LOG_LEVEL="WARNING", PYTHONPATH=str(source))
    env.update(extra_env)
    process = subprocess.Popen(
        [sys.executable, "-m", "bot", "serve", "--port", str(port), "--workers", str(workers), *serve_args],
        cwd=workdir,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    # Its log read as it comes, never left to fill the pipe (a server blocked writing a warning
    # would look slow, or never stop); the last lines kept to say why it failed.
    said: collections.deque[str] = collections.deque(maxlen=40)
    threading.Thread(target=said.extend, args=(process.stderr,), daemon=True).start()
    SERVER_LOGS[process.pid] = said
    base = f"http://127.0.0.1:{port}"
    ready = wait_for(lambda: _healthy(base), timeout=90, interval=0.2)
    if not ready:
        process.kill()
        process.wait()
        raise SystemExit(f"perfbot serve did not start: {_last_words(process)}")
    return process, base


SERVER_LOGS: dict[int, collections.deque[str]] = {}


def _last_words(process: subprocess.Popen) -> str:
    """The end of a server's log, for an error message."""
    time.sleep(0.2)  # what it wrote as it ended, read by its thread
    return "".join(SERVER_LOGS.get(process.pid, ()))[-3000:] or "(it logged nothing)"


def _healthy(base: str) -> bool:
    try:
        return requests.get(f"{base}/healthz", timeout=1).status_code == 200
    except requests.RequestException:
        return False


def stop(process: subprocess.Popen) -> None:
    """SIGTERM, as a supervisor stops the server; it must exit within 60 s leaving none of its
    processes (web workers, queue consumers) behind."""
    family = descendants(process.pid)
    started = time.perf_counter()
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise SystemExit(
            f"perfbot serve did not stop within 60 s of SIGTERM; its log ended with:\n{_last_words(process)}"
        ) from None
    # What the server's processes started end when they do (a consumer's scoring process on its
    # parent's death), a moment after them.
    waited_until = time.monotonic() + 2.0
    while (left := [pid for pid in family if Path(f"/proc/{pid}").exists() and not zombie(pid)]) and (
        time.monotonic() < waited_until
    ):
        time.sleep(0.05)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    if process.returncode != 0 or left:
        took = time.perf_counter() - started
        raise SystemExit(
            f"perfbot serve exited {process.returncode} after {took:.1f} s, "
            f"leaving {len(left)} of its processes running"
        )


def descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        children = children_of(parent)
        found += children
        todo += children
    return found


def children_of(pid: int) -> list[int]:
    """The children of every thread of ``pid``: a consumer's scoring process is started by the
    thread of the first review, not by the main thread."""
    children: list[int] = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return children
    for task in tasks:
        try:
            children += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return children


def zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return False


def signed(event: str, body: bytes, guid: str) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": guid,
        "X-GitHub-Hook-ID": "1",
        "X-Hub-Signature-256": sign(SECRET, body),
        "User-Agent": "GitHub-Hookshot/bench",
    }


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


# Part 1: intake under load


def installation_body(i: int, template: dict) -> bytes:
    payload = copy.deepcopy(template)
    payload["repositories_added"] = [
        {
            **template["repositories_added"][0],
            "id": 10_000_000 + i,
            "full_name": f"bench/repo-{i}",
            "name": f"repo-{i}",
        }
    ]
    return json.dumps(payload).encode()


def deliveries(count: int, review_shas: list[str]) -> list[tuple[str, bytes]]:
    """``count`` deliveries, the reviews (PR n pushed to ``review_shas[n - 1]``) spread evenly
    among installation deliveries."""
    template = github_data.installation_event("installation_repositories", "added")
    every = max(1, count // len(review_shas)) if review_shas else count + 1
    found: list[tuple[str, bytes]] = []
    for i in range(count):
        number = i // every + 1
        if i % every == every // 2 and number <= len(review_shas):
            payload = github_data.pull_request("synchronize", head_sha=review_shas[number - 1], number=number)
            found.append(("pull_request", json.dumps(payload).encode()))
        else:
            found.append(("installation_repositories", installation_body(i, template)))
    return found


def load(base: str, rate: float, sent: list[tuple[str, bytes]], senders: int) -> dict:
    jobs: queue.Queue = queue.Queue()
    results: list[tuple[float, int]] = []
    lock = threading.Lock()

    host, port = base.removeprefix("http://").split(":")

    def sender() -> None:
        # http.client, not requests: the sender shares the CPUs with the server it measures.
        connection = http.client.HTTPConnection(host, int(port), timeout=10)
        while (job := jobs.get()) is not None:
            scheduled, event, body = job
            delay = scheduled - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            try:
                connection.request("POST", "/webhook", body, signed(event, body, str(uuid.uuid4())))
                response = connection.getresponse()
                response.read()
                status = response.status
            except (OSError, http.client.HTTPException):
                connection.close()
                status = 0
            with lock:
                results.append((time.perf_counter() - scheduled, status))

    threads = [threading.Thread(target=sender, daemon=True) for _ in range(senders)]
    for thread in threads:
        thread.start()
    start = time.perf_counter() + 0.5
    for i, (event, body) in enumerate(sent):
        jobs.put((start + i / rate, event, body))
    for _ in threads:
        jobs.put(None)
    for thread in threads:
        thread.join()
    latencies = [lat * 1000 for lat, _ in results]
    return {
        "sent": len(sent),
        "accepted": sum(1 for _, s in results if s == 202),
        "non_2xx": sum(1 for _, s in results if not 200 <= s < 300),
        "p50_ms": percentile(latencies, 50),
        "p95_ms": percentile(latencies, 95),
        "p99_ms": percentile(latencies, 99),
        "max_ms": max(latencies),
    }


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process and its descendants (the gunicorn master and its workers)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for current in [pid, *descendants(pid)]:
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
        except (OSError, IndexError):
            continue
    return total


def roles_cpu(pid: int) -> dict[str, float]:
    """CPU seconds of the server's processes by role: gunicorn's master, its web workers, its
    queue consumers (`perfbot worker` children, with what they started: the scoring process)."""
    tick = os.sysconf("SC_CLK_TCK")
    found = {"master": 0.0, "web workers": 0.0, "consumers": 0.0}
    todo = [(pid, "master")]
    while todo:
        current, role = todo.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            command = Path(f"/proc/{current}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError):
            continue
        if role != "consumers":
            role = "master" if current == pid else "consumers" if " worker" in command else "web workers"
        found[role] += (int(fields[11]) + int(fields[12])) / tick
        todo += [(child, role) for child in children_of(current)]
    return found


def machine_busy_seconds() -> float:
    """CPU time the whole machine spent busy since boot, all CPUs together (/proc/stat)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:9]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields) - idle) / os.sysconf("SC_CLK_TCK")


def processed(db: Path) -> tuple[int, int, int, int]:
    """(deliveries done, deliveries attempted more than once, repositories recorded, reviews saved)."""
    with sqlite3.connect(db) as connection:
        done = connection.execute("SELECT count(*) FROM deliveries WHERE status = 'done'").fetchone()[0]
        again = connection.execute("SELECT count(*) FROM deliveries WHERE attempts > 1").fetchone()[0]
        # The installation deliveries' repositories alone: a pull request's delivery records its
        # own repository too (the one the reviews are of).
        repos = connection.execute(
            "SELECT count(*) FROM repositories WHERE full_name LIKE 'bench/repo-%'"
        ).fetchone()[0]
        reviews = connection.execute("SELECT count(*) FROM reviews").fetchone()[0]
    return done, again, repos, reviews


def run_emulator(connection, pulls: int, diff_lines: int) -> None:
    """The GitHub API emulator in a process of its own, holding PRs 1..``pulls`` with a
    ``diff_lines``-line diff each: sends its URL and the PRs' heads, then on "report" what it was
    asked to write, until "stop"."""
    emulator = GitHubEmulator(tokens={TOKEN}).start()
    emulator.add_repo(REPO, "master")
    text = big_diff(diff_lines)
    shas = [uuid.uuid4().hex + f"{n:08x}" for n in range(1, pulls + 1)]
    for number, sha in enumerate(shas, 1):
        emulator.add_pull(REPO, number, sha, text)
    connection.send((emulator.base_url, shas))
    while connection.recv() == "report":
        connection.send(
            {
                "comments": [len(emulator.comments_on(REPO, n)) for n in range(1, pulls + 1)],
                "statuses": collections.Counter(s["_sha"] for s in emulator.statuses),
                "invalid": list(emulator.invalid),
            }
        )
    emulator.stop()


def intake_benchmark(
    rate: float,
    seconds: float,
    workers: int,
    review_rate: float,
    diff_lines: int,
    source: Path = ROOT,
    serve_args: tuple[str, ...] = (),
) -> dict:
    count, reviews = int(rate * seconds), int(review_rate * seconds)
    here, there = multiprocessing.get_context("spawn").Pipe()
    emulator = multiprocessing.get_context("spawn").Process(
        target=run_emulator, args=(there, reviews, diff_lines), daemon=True
    )
    emulator.start()
    api_url, shas = here.recv()
    sent = deliveries(count, shas)
    with tempfile.TemporaryDirectory() as tmp:
        process, base = start_server(
            Path(tmp),
            {"PERFBOT_GITHUB_TOKEN": TOKEN, "PERFBOT_GITHUB_API_URL": api_url},
            workers,
            source,
            serve_args,
        )
        try:
            load_average_before = os.getloadavg()
            cpu_before, sender_before = cpu_seconds(process.pid), time.process_time()
            roles_before = roles_cpu(process.pid)
            emulator_before, machine_before = cpu_seconds(emulator.pid), machine_busy_seconds()
            figures = load(base, rate, sent, senders=16)
            sender_cpu = time.process_time() - sender_before
            figures["load_average"] = os.getloadavg()[0]
            figures["load_average_before"] = load_average_before
            # What the rest of the machine (other users' work) took of its CPUs during the load.
            figures["others_cpu_share"] = max(
                0.0,
                (
                    machine_busy_seconds()
                    - machine_before
                    - (cpu_seconds(process.pid) - cpu_before)
                    - (cpu_seconds(emulator.pid) - emulator_before)
                    - sender_cpu
                )
                / (seconds * (os.cpu_count() or 1)),
            )
            figures["sender_cpu_ms_per_delivery"] = sender_cpu * 1000 / figures["sent"]
            db = Path(tmp) / "perfbot.db"
            load_ended = time.perf_counter()
            wait_for(lambda: processed(db)[0] >= figures["accepted"], timeout=600, interval=0.5)
            figures["drained_s"] = time.perf_counter() - load_ended
            figures["server_cpu_ms_per_delivery"] = (
                (cpu_seconds(process.pid) - cpu_before) * 1000 / figures["sent"]
            )
            roles_after = roles_cpu(process.pid)
            figures["roles_cpu_ms_per_delivery"] = {
                role: (roles_after[role] - roles_before[role]) * 1000 / figures["sent"]
                for role in roles_after
            }
            done, retried, repositories, reviews_saved = processed(db)
            figures.update(done=done, retried=retried, repositories=repositories, reviews_saved=reviews_saved)
        finally:
            stop(process)
            here.send("report")
            github = here.recv()
            here.send("stop")
            emulator.join(30)
    figures["reviews"] = reviews
    figures["installations"] = count - reviews
    figures["comments_per_pr"] = sorted(set(github["comments"]))
    figures["statuses_per_head"] = sorted({github["statuses"][sha] for sha in shas})
    figures["invalid_requests"] = len(github["invalid"])
    figures["lost"] = figures["sent"] - figures["done"]
    figures["doubled"] = (
        figures["retried"]
        + sum(n - 1 for n in github["comments"] if n > 1)
        + sum(github["statuses"][sha] - 1 for sha in shas if github["statuses"][sha] > 1)
    )
    return figures


def report_intake(name: str, intake: dict, rate: float, seconds: float) -> bool:
    """Print one layout's figures; whether it met the targets."""
    print(
        f"intake, {name}: {intake['sent']} deliveries at {rate:g}/s for {seconds:g} s on "
        f"{os.cpu_count()} CPUs, {intake['reviews']} of them reviews of a 5,000-line PR"
    )
    print(
        f"  p50 {intake['p50_ms']:.1f} ms  p95 {intake['p95_ms']:.1f} ms  p99 {intake['p99_ms']:.1f} ms  "
        f"max {intake['max_ms']:.1f} ms (target p99 <= 10 ms; ratio {intake['p99_ms'] / 10:.2f})"
    )
    print(
        f"  lost {intake['lost']}, doubled {intake['doubled']} (deliveries not processed; deliveries "
        f"attempted twice, extra sticky comments and commit statuses)"
    )
    print(
        f"  accepted {intake['accepted']}, non-2xx {intake['non_2xx']}, processed {intake['done']}, "
        f"attempted twice {intake['retried']}, repositories recorded {intake['repositories']} "
        f"of {intake['installations']}, reviews saved {intake['reviews_saved']} of {intake['reviews']}; "
        f"sticky comments per PR {intake['comments_per_pr']}, statuses per pushed head "
        f"{intake['statuses_per_head']}, invalid GitHub requests {intake['invalid_requests']}"
    )
    roles = ", ".join(f"{role} {ms:.2f} ms" for role, ms in intake["roles_cpu_ms_per_delivery"].items())
    print(
        f"  CPU per delivery: server (intake + processing) {intake['server_cpu_ms_per_delivery']:.2f} ms "
        f"({roles}), load generator {intake['sender_cpu_ms_per_delivery']:.2f} ms; queue drained "
        f"{intake['drained_s']:.1f} s after the last delivery"
    )
    before = " ".join(f"{v:.2f}" for v in intake["load_average_before"])
    print(
        f"  machine: load average {before} (1, 5, 15 min) before the load, {intake['load_average']:.2f} at "
        f"its end; other processes took {intake['others_cpu_share']:.0%} of the CPUs during the load"
    )
    once = (
        intake["done"] == intake["accepted"] == intake["sent"]
        and intake["lost"] == intake["doubled"] == 0
        and intake["repositories"] == intake["installations"]
        and intake["reviews_saved"] == intake["reviews"]
        and intake["comments_per_pr"] in ([1], [])
        and intake["statuses_per_head"] in ([1], [])
        and intake["invalid_requests"] == 0
    )
    return intake["p99_ms"] <= 10 and intake["non_2xx"] == 0 and once


# Part 2: review end to end


def big_diff(lines: int, files: int = 50) -> str:
    per_file = lines // files
    sections = []
    for i in range(files):
        path = f"python/sglang/srt/layers/attention/backend_{i:03d}.py"
        body = "".join(
            f"+        out_{j} = torch.cuda.synchronize() or self.attn(q, k, v)\n" for j in range(per_file)
        )
        sections.append(
            f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
            f"@@ -1,0 +1,{per_file} @@ def forward(self, q, k, v):\n{body}"
        )
    return "".join(sections)


def review_benchmark(reviews: int, diff_lines: int) -> dict:
    emulator = GitHubEmulator(tokens={TOKEN}).start()
    repo = REPO
    emulator.add_repo(repo, "master")
    text = big_diff(diff_lines)
    timings = []
    with tempfile.TemporaryDirectory() as tmp:
        process, base = start_server(
            Path(tmp), {"PERFBOT_GITHUB_TOKEN": TOKEN, "PERFBOT_GITHUB_API_URL": emulator.base_url}
        )
        try:
            for i in range(reviews):
                sha = uuid.uuid4().hex + f"{i:08x}"
                emulator.add_pull(repo, 2, sha, text)
                payload = github_data.pull_request("synchronize", head_sha=sha, number=2)
                body = json.dumps(payload).encode()
                started = time.perf_counter()
                response = requests.post(
                    f"{base}/webhook",
                    data=body,
                    timeout=10,
                    headers=signed("pull_request", body, str(uuid.uuid4())),
                )
                assert response.status_code == 202, response.text

                def commented(sha: str = sha) -> bool:
                    return any(sha[:12] in c["body"] for c in emulator.comments_on(repo, 2))

                assert wait_for(commented, timeout=60, interval=0.005), "no comment"
                timings.append(time.perf_counter() - started)
        finally:
            stop(process)
            emulator.stop()
    assert len(emulator.comments_on(repo, 2)) == 1 and not emulator.invalid
    return {
        "reviews": reviews,
        "diff_lines": text.count("\n+"),
        "p50_s": statistics.median(timings),
        "max_s": max(timings),
        "comment_chars": len(emulator.comments_on(repo, 2)[0]["body"]),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument(
        "--review-rate",
        type=float,
        default=1.0,
        help="reviews of a --diff-lines PR per second among the deliveries (default 1)",
    )
    parser.add_argument("--reviews", type=int, default=20, help="reviews timed end to end (part 2)")
    parser.add_argument("--diff-lines", type=int, default=5000)
    parser.add_argument("--workers", type=int, default=1, help="perfbot serve --workers (default 1)")
    parser.add_argument(
        "--serve-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="one more argument for perfbot serve in the intake part, e.g. --serve-arg=--consumer-threads=1",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        help="also measure the intake of this perfbot source tree, first (before/after)",
    )
    args = parser.parse_args()
    github_data.ensure()

    ok = True
    layouts = [("baseline", args.baseline)] if args.baseline else []
    for name, source in [*layouts, ("this checkout", ROOT)]:
        intake = intake_benchmark(
            args.rate,
            args.seconds,
            args.workers,
            args.review_rate,
            args.diff_lines,
            source,
            tuple(args.serve_arg),
        )
        met = report_intake(f"{name} ({source})", intake, args.rate, args.seconds)
        ok = ok and (met or source != ROOT)  # the targets are this checkout's
    review = review_benchmark(args.reviews, args.diff_lines)
    print(
        f"review: {review['reviews']} pushes of a {review['diff_lines']}-line PR, delivery -> comment in the "
        f"emulator: p50 {review['p50_s'] * 1000:.0f} ms, max {review['max_s'] * 1000:.0f} ms "
        f"(target p50 <= 1 s; ratio {review['p50_s']:.2f}); comment {review['comment_chars']} chars"
    )
    ok = ok and review["p50_s"] <= 1.0
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
