"""Soak and scale-out: mixed deliveries at a steady rate for a long while, against the GitHub API
emulator, with memory, acknowledgement latency, queue lag and exactly-once measured as it goes.

Layouts (``--layout``):
- ``scale`` (default): two `perfbot serve` (one web worker each) behind no balancer (the sender
  alternates between them) and two `perfbot worker` (the first runs the periodic tasks, the
  second is ``--no-periodic``), on one PostgreSQL and one Redis of its own, loopback only.
- ``embedded``: one `perfbot serve` on its defaults (SQLite files, the consumer it supervises).

The mix, per 20 deliveries: 8 comments that are not commands (refused at intake: nothing stored),
5 pushes (`pull_request.synchronize`) with a new small diff to one of the open pull requests
(``--pulls`` of them are open when it starts; merges keep about that many open), 3
`installation_repositories`, 1 new pull request (`opened`), 1 `/bench` by a maintainer on a pull
request of its own (the workflow is dispatched on the emulator; 15 s later the run completes with a
results artifact and its `workflow_run` is delivered), 1 merge (`closed`, merged) of a reviewed pull
request (the dashboard's flagged merges), and 1 `workflow_run` when one is due (else a comment).
Every ``--big-every`` seconds a push carries a diff of ``--big-mb`` MB (GitHub's diff limit is
20 MB: GitHub answers such a PR's diff media type with 406 and the bot reads its files instead).

Every ``--sample`` seconds it records the resident memory of each process of the layout, the
acknowledgement latency (p50/p99 of the window, measured from each delivery's scheduled time:
open loop), the deliveries waiting (pending in the store) and the processing lag (p99 of finished
- received for those finished in the window). At the end: every acknowledged stored delivery done
exactly once (none failed, none finished twice), one sticky comment per pull request, one dispatch
per `/bench`, one result per run, which process did how many (scale-out spread), how often the
periodic sweep ran (once a minute in all, not once per worker) and whether both servers' dashboard
APIs answer the same.

    .venv/bin/python benchmarks/bench_soak.py --minutes 30               # the full soak
    .venv/bin/python benchmarks/bench_soak.py --minutes 2 --rate 10      # a quick look
    /tmp/plotvenv/bin/python benchmarks/plot_soak.py RESULTS.json docs/images/soak.png

Each process's GitHub write budget is lifted by default (``--writes-per-minute``): the emulator has
no secondary rate limit, and with GitHub's (about 80 writes a minute per installation, perfbot's
default budget) one installation's reviews, not perfbot, would set the pace.

It writes its samples and summary as JSON (``--out``) and prints the summary.
"""

from __future__ import annotations

import argparse
import collections
import http.client
import itertools
import json
import os
import queue
import random
import re
import signal
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import create_engine, func, select  # noqa: E402

from bot.adapters.store.tables import DeliveryRow  # noqa: E402
from bot.core.bench import contract  # noqa: E402
from bot.core.config.schema import CONFIG_PATH  # noqa: E402
from bot.core.render.comment import MARKER  # noqa: E402
from tests.core.bench.zips import archive  # noqa: E402
from tests.core.judge.results_data import BASE_SHA, EAGLE3, HEAD_SHA, document  # noqa: E402
from tests.service import diffs  # noqa: E402
from tests.support import github_data  # noqa: E402
from tests.support.faults import Postgres, Redis, Server, Worker, health, perfbot_env, signed  # noqa: E402
from tests.support.github_emulator import GitHubEmulator, wait_for  # noqa: E402
from tests.support.serving import children  # noqa: E402

REPO, BRANCH, TOKEN = "Codertocat/Hello-World", "master", "ghp_soak_token"
CONFIG = (
    diffs.BASE_CONFIG
    + """bench:
  suites:
    sglang-eagle3: {kind: sglang-eagle3, model_path: m, draft_model_path: d}
  dispatch:
    cooldown: {user: 0, pr: 0}
"""
)
RUN_COMPLETES_S = 15.0
FINISHED_LATE = "finished after its lease had run out"


# ------------------------------------------------------------------ the GitHub side


class GitHubSide:
    """The emulator with the repository, its pull requests and its workflow; creates pull requests
    and pushes as the mix needs them, and completes dispatched runs."""

    def __init__(self, big_mb: float, pulls: int):
        self.emulator = GitHubEmulator(tokens={TOKEN}).start()
        state = self.emulator.add_repo(REPO, BRANCH)
        state.files[(BRANCH, CONFIG_PATH)] = CONFIG
        state.branches[BRANCH] = "f" * 40
        state.permissions["maintainer"] = "write"
        state.parents["c" * 40] = [BASE_SHA]  # the merge commit of every merged pull request
        self.emulator.add_workflow(REPO)
        self.numbers = itertools.count(1)
        self.open: list[int] = []
        self.reviewed: list[int] = []
        self.big = _diff(int(big_mb * 1024 * 1024 / 60))
        self.lock = threading.Lock()
        self.pool = pulls
        for _ in range(pulls):  # open before the soak starts: the pushes spread over them
            self.new_pull()

    def new_pull(self, diff: str = diffs.HIGH) -> tuple[int, str]:
        number, sha = next(self.numbers), uuid.uuid4().hex + "00000000"
        with self.lock:
            self.emulator.add_pull(REPO, number, sha, diff, base_sha=BASE_SHA, base_ref=BRANCH)
            self.open.append(number)
        return number, sha

    def push(self, number: int, diff: str) -> str:
        sha = uuid.uuid4().hex + "00000000"
        with self.lock:
            pull = self.emulator.repos[REPO].pulls[number]
            pull.head_sha, pull.diff = sha, diff
        return sha

    def bench_pull(self) -> int:
        number = next(self.numbers)
        with self.lock:
            self.emulator.add_pull(REPO, number, HEAD_SHA, diffs.HIGH, base_sha=BASE_SHA, base_ref=BRANCH)
        return number

    def complete(self, dispatched: dict) -> dict:
        correlation = dispatched["inputs"]["correlation-id"]
        payload = archive({"results.json": json.dumps(document(EAGLE3)).encode()})
        name = contract.artifact_name(correlation)
        self.emulator.upload_artifact(REPO, dispatched["run_id"], name, payload)
        run = self.emulator.complete_run(dispatched["run_id"])
        return github_data.workflow_run("completed", run, repo=REPO, installation_id=1)


def _diff(bytes_per_file: int, files: int = 60) -> str:
    line = "+        out = torch.cuda.synchronize() or self.attn(q, k, v)  # a hot path\n"
    per_file = max(1, bytes_per_file // len(line))
    sections = []
    for i in range(files):
        path = f"src/perfbot_fixture/graphs_{i:03d}.py" if i else diffs.GRAPHS
        sections.append(
            f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
            f"@@ -1,0 +1,{per_file} @@ def forward(self, q, k, v):\n{line * per_file}"
        )
    return "".join(sections)


# ------------------------------------------------------------------ the mix


@dataclass
class Sent:
    kind: str
    guid: str
    scheduled: float
    status: int = 0
    answered: float = 0.0
    resent: int = 0


@dataclass
class Mix:
    github: GitHubSide
    big_every_s: float
    started: float = field(default_factory=time.monotonic)
    due_runs: list[tuple[float, dict]] = field(default_factory=list)
    benches: list[int] = field(default_factory=list)
    last_big: float = field(default_factory=time.monotonic)
    installations: itertools.count = field(default_factory=lambda: itertools.count(1))
    comments: itertools.count = field(default_factory=lambda: itertools.count(10_000_000))
    seen_dispatches: int = 0

    def next(self, n: int) -> tuple[str, str, dict]:
        """(kind, event, payload) of delivery number ``n``."""
        self._note_dispatches()
        now = time.monotonic()
        if self.due_runs and self.due_runs[0][0] <= now:
            _, dispatched = self.due_runs.pop(0)
            return "workflow_run", "workflow_run", self.github.complete(dispatched)
        if now - self.last_big >= self.big_every_s and self.github.open:
            self.last_big = now
            number = random.choice(self.github.open)
            sha = self.github.push(number, self.github.big)
            return "push_big", "pull_request", _pull("synchronize", sha, number)
        slot = n % 20
        if slot < 8 or (slot == 19):
            return "comment", "issue_comment", self._chatter()
        if slot < 13:
            if not self.github.open:
                number, sha = self.github.new_pull()
                return "opened", "pull_request", _pull("opened", sha, number)
            number = random.choice(self.github.open)
            sha = self.github.push(number, diffs.HIGH)
            self.github.reviewed.append(number)
            return "push", "pull_request", _pull("synchronize", sha, number)
        if slot < 16:
            return "installation", "installation_repositories", _installation(next(self.installations))
        if slot == 16:
            number, sha = self.github.new_pull()
            self.github.reviewed.append(number)
            return "opened", "pull_request", _pull("opened", sha, number)
        if slot == 17:
            number = self.github.bench_pull()
            self.benches.append(number)
            posted = self.github.emulator.add_comment(REPO, number, "/bench", "maintainer")
            return (
                "bench",
                "issue_comment",
                github_data.issue_comment(
                    "/bench",
                    number=number,
                    repo=REPO,
                    installation_id=1,
                    login="maintainer",
                    comment_id=posted["id"],
                ),
            )
        merged = [n for n in self.github.reviewed if n in self.github.open][:1]
        if not merged or len(self.github.open) <= self.github.pool:
            return "comment", "issue_comment", self._chatter()
        number = merged[0]
        self.github.open.remove(number)
        pull = self.github.emulator.repos[REPO].pulls[number]
        return "merged", "pull_request", _pull("closed", pull.head_sha, number)

    def _chatter(self) -> dict:
        return github_data.issue_comment(
            "looks good to me",
            number=1,
            repo=REPO,
            installation_id=1,
            login="octocat",
            comment_id=next(self.comments),
        )

    def _note_dispatches(self) -> None:
        dispatches = self.github.emulator.dispatches
        for dispatched in dispatches[self.seen_dispatches :]:
            self.due_runs.append((time.monotonic() + RUN_COMPLETES_S, dispatched))
        self.seen_dispatches = len(dispatches)


def _pull(action: str, sha: str, number: int) -> dict:
    return github_data.pull_request(action, head_sha=sha, number=number, installation_id=1)


def _installation(n: int) -> dict:
    template = github_data.installation_event("installation_repositories", "added")
    template["repositories_added"] = [
        {
            **template["repositories_added"][0],
            "id": 70_000_000 + n,
            "full_name": f"soak/repo-{n}",
            "name": f"repo-{n}",
        }
    ]
    return template


# ------------------------------------------------------------------ sending and watching


class Sender:
    def __init__(self, bases: list[str], rate: float, seconds: float, mix: Mix, senders: int = 12):
        self.bases, self.rate, self.seconds, self.mix = bases, rate, seconds, mix
        self.sent: list[Sent] = []
        self.jobs: queue.Queue = queue.Queue(maxsize=200)
        self.threads = [threading.Thread(target=self._send, daemon=True) for _ in range(senders)]

    def run(self) -> None:
        for thread in self.threads:
            thread.start()
        start = time.monotonic() + 0.5
        for n in itertools.count():
            scheduled = start + n / self.rate
            if scheduled - start >= self.seconds:
                break
            time.sleep(max(0.0, scheduled - time.monotonic() - 0.05))
            kind, event, payload = self.mix.next(n)
            record = Sent(kind, str(uuid.uuid4()), scheduled)
            self.sent.append(record)
            self.jobs.put((record, event, json.dumps(payload).encode(), self.bases[n % len(self.bases)]))
        for _ in self.threads:
            self.jobs.put(None)
        for thread in self.threads:
            thread.join()

    def _send(self) -> None:
        connections: dict[str, http.client.HTTPConnection] = {}
        while (job := self.jobs.get()) is not None:
            record, event, body, base = job
            time.sleep(max(0.0, record.scheduled - time.monotonic()))
            host, port = base.removeprefix("http://").split(":")
            # A kept-alive connection the server closed as it was reused: sent again on a new one,
            # as the same delivery (same GUID: the server stores it once however often it comes).
            for attempt in range(2):
                reused = base in connections
                if not reused:
                    connections[base] = http.client.HTTPConnection(host, int(port), timeout=30)
                connection = connections[base]
                try:
                    connection.request("POST", "/webhook", body, signed(event, body, record.guid))
                    response = connection.getresponse()
                    response.read()
                    record.status = response.status
                    break
                except (OSError, http.client.HTTPException):
                    connection.close()
                    connections.pop(base, None)
                    if not reused or attempt:
                        break
                    record.resent += 1
            record.answered = time.monotonic()


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def roles(servers: list[Server], workers: list[Worker]) -> dict[str, list[int]]:
    found: dict[str, list[int]] = collections.defaultdict(list)
    for n, server in enumerate(servers, 1):
        found[f"serve {n} master"].append(server.process.pid)
        for pid, command in children(server.process.pid).items():
            if "bot.adapters.sqlite_files" in command:
                continue  # the WAL checkpointer (SQLite only)
            role = "consumer" if " -m bot worker" in command else "web worker"
            found[f"serve {n} {role}"].append(pid)
    for n, worker in enumerate(workers, 1):
        found[f"worker {n}"].append(worker.process.pid)
    return found


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def sample(
    engine, sender: Sender, servers, workers, since: float, started: float, since_wall: datetime
) -> dict:
    now = time.monotonic()
    window = [s for s in list(sender.sent) if since <= s.answered < now and s.answered]
    latencies = [(s.answered - s.scheduled) * 1000 for s in window]
    with engine.connect() as connection:
        pending = connection.execute(select(func.count()).where(DeliveryRow.status == "pending")).scalar_one()
        finished = connection.execute(
            select(DeliveryRow.received_at, DeliveryRow.finished_at).where(
                DeliveryRow.finished_at >= since_wall
            )
        ).all()
    lags = [(f - r).total_seconds() for r, f in finished if r and f]
    memory = {
        role: round(sum(rss_mb(pid) for pid in pids), 1) for role, pids in roles(servers, workers).items()
    }
    return {
        "t_s": round(now - started, 1),
        "acknowledged": sum(1 for s in window if 200 <= s.status < 300),
        "non_2xx": sum(1 for s in window if not 200 <= s.status < 300),
        "ack_p50_ms": percentile(latencies, 50),
        "ack_p99_ms": percentile(latencies, 99),
        "pending": pending,
        "processed": len(finished),
        "lag_p99_s": percentile(lags, 99),
        "rss_mb": memory,
        "load_average": os.getloadavg()[0],
    }


# ------------------------------------------------------------------ the layouts


def start_layout(layout: str, workdir: Path, api_url: str, writes_per_minute: int):
    github = {
        "PERFBOT_GITHUB_TOKEN": TOKEN,
        "PERFBOT_GITHUB_API_URL": api_url,
        "PERFBOT_LOG_LEVEL": "INFO",
        "PERFBOT_WRITES_PER_MINUTE": str(writes_per_minute),
    }
    if layout == "embedded":
        server = Server(workdir, perfbot_env(**github)).start()
        return [server], [], f"sqlite:///{workdir / 'perfbot.db'}", []
    postgres, redis = Postgres().start(), Redis(workdir).start()
    env = perfbot_env(PERFBOT_DATABASE_URL=postgres.url, PERFBOT_QUEUE_URL=redis.url, **github)
    servers = [Server(workdir, env).start() for _ in range(2)]
    workers = [
        Worker(workdir, env, ["--threads", "4"], name="worker-1").start(),
        Worker(workdir, env, ["--threads", "4", "--no-periodic"], name="worker-2").start(),
    ]
    wait_for(lambda: (health(servers[0].base)[1].get("consumers") or 0) >= 2, timeout=90)
    return servers, workers, postgres.url, [redis, postgres]


def post(base: str, event: str, payload: dict) -> Sent:
    record = Sent(event, str(uuid.uuid4()), time.monotonic())
    body = json.dumps(payload).encode()
    host, port = base.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    connection.request("POST", "/webhook", body, signed(event, body, record.guid))
    response = connection.getresponse()
    response.read()
    record.status, record.answered = response.status, time.monotonic()
    return record


def api(base: str, path: str) -> object:
    host, port = base.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    connection.request("GET", path)
    return json.loads(connection.getresponse().read())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layout", choices=("scale", "embedded"), default="scale")
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--rate", type=float, default=10.0, help="deliveries per second (default 10)")
    parser.add_argument("--big-mb", type=float, default=20.0, help="size of the big diffs (default 20 MB)")
    parser.add_argument("--big-every", type=float, default=120.0, help="seconds between big pushes")
    parser.add_argument("--sample", type=float, default=15.0, help="seconds between samples")
    parser.add_argument("--pulls", type=int, default=30, help="open pull requests the pushes spread over")
    parser.add_argument(
        "--writes-per-minute",
        type=int,
        default=100_000,
        help="PERFBOT_WRITES_PER_MINUTE of each process (default: no limit in effect; "
        "GitHub's is about 80 a minute per installation, which caps the reviews)",
    )
    parser.add_argument("--out", type=Path, default=Path("soak.json"))
    args = parser.parse_args()
    github_data.ensure()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # stop what it started, as on Ctrl-C
    side = GitHubSide(args.big_mb, args.pulls)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        servers, workers, database, services = start_layout(
            args.layout, workdir, side.emulator.base_url, args.writes_per_minute
        )
        engine = create_engine(database)
        mix = Mix(side, args.big_every)
        sender = Sender([s.base for s in servers], args.rate, args.minutes * 60, mix)
        samples: list[dict] = []
        load_before = os.getloadavg()
        started = time.monotonic()
        thread = threading.Thread(target=sender.run, daemon=True)
        thread.start()
        since, since_wall = started, datetime.now(UTC)
        try:
            while thread.is_alive():
                thread.join(args.sample)
                samples.append(sample(engine, sender, servers, workers, since, started, since_wall))
                since, since_wall = time.monotonic(), datetime.now(UTC)
                print(json.dumps(samples[-1]), flush=True)
            sent_until = time.monotonic()
            # Runs dispatched near the end still complete, and their workflow_run is delivered.
            deadline = time.monotonic() + RUN_COMPLETES_S + 60

            def runs_left() -> bool:
                dispatches = len(side.emulator.dispatches)
                return bool(mix.due_runs) or dispatches > mix.seen_dispatches or dispatches < len(mix.benches)

            while time.monotonic() < deadline and runs_left():
                mix._note_dispatches()
                if mix.due_runs and mix.due_runs[0][0] <= time.monotonic():
                    _, dispatched = mix.due_runs.pop(0)
                    sender.sent.append(post(servers[0].base, "workflow_run", side.complete(dispatched)))
                time.sleep(0.5)
            acknowledged = {s.guid for s in sender.sent if s.status in (200, 202)}
            stored = {s.guid for s in sender.sent if s.status == 202}

            def drained() -> bool:
                with engine.connect() as connection:
                    rows = connection.execute(select(DeliveryRow.guid, DeliveryRow.status)).all()
                return all(status != "pending" for guid, status in rows if guid in stored)

            wait_for(drained, timeout=900, interval=1.0)
            drained_s = time.monotonic() - sent_until
            summary = summarize(
                args,
                engine,
                sender,
                side,
                mix,
                servers,
                workers,
                stored,
                acknowledged,
                samples,
                drained_s,
                load_before,
            )
        finally:
            for process in [*servers, *workers]:
                process.stop()
            engine.dispose()
            for service in services:
                service.stop()
            side.emulator.stop()
    args.out.write_text(
        json.dumps(
            {"args": {k: str(v) for k, v in vars(args).items()}, "samples": samples, "summary": summary},
            indent=1,
        )
    )
    print(json.dumps(summary, indent=1))
    return 0 if summary["exactly_once"] else 1


def summarize(
    args, engine, sender, side, mix, servers, workers, stored, acknowledged, samples, drained_s, load_before
) -> dict:
    with engine.connect() as connection:
        rows = connection.execute(
            select(
                DeliveryRow.guid,
                DeliveryRow.status,
                DeliveryRow.attempts,
                DeliveryRow.lease_owner,
                DeliveryRow.event,
                DeliveryRow.action,
                DeliveryRow.failure,
                DeliveryRow.error,
            )
        ).all()
    mine = [r for r in rows if r.guid in stored]
    by_status = collections.Counter(r.status for r in mine)
    owners = collections.Counter((r.lease_owner or "?").rsplit("/", 1)[-1].split(".")[0] for r in mine)
    pid_roles = {str(pid): role for role, pids in roles(servers, workers).items() for pid in pids}
    logs = "".join(p.log() for p in [*servers, *workers])
    sticky = collections.Counter(
        c["_issue"][1] for c in side.emulator.comments.values() if c["body"].startswith(MARKER)
    )
    # The risk review's commit status, once per pushed head (the benchmark's status is updated as the
    # run goes: pending, then its verdict; the /bench pull requests share one head, the results').
    statuses = collections.Counter(
        (s["_sha"], s.get("context"))
        for s in side.emulator.statuses
        if s["_sha"] != HEAD_SHA and s.get("context") == "perfbot / risk"
    )
    dispatched = collections.Counter(d["inputs"]["correlation-id"] for d in side.emulator.dispatches)
    processes = {
        **{f"worker {n}": w for n, w in enumerate(workers, 1)},
        **{f"serve {n}": s for n, s in enumerate(servers, 1)},
    }
    sweeps = {name: len(re.findall(r'"msg": "sweep"', p.log())) for name, p in processes.items()}
    dashboards = [api(s.base, "/api/v1/merges") for s in servers]
    kinds = collections.Counter(s.kind for s in sender.sent)
    rss = [s["rss_mb"] for s in samples]
    first, last = (rss[min(1, len(rss) - 1)], rss[-1]) if rss else ({}, {})
    summary = {
        "layout": args.layout,
        "minutes": args.minutes,
        "rate": args.rate,
        "sent": len(sender.sent),
        "kinds": dict(kinds),
        "acknowledged": len(acknowledged),
        "stored": len(stored),
        "non_2xx": sum(1 for s in sender.sent if s.status not in (200, 202)),
        "resent_on_a_closed_keepalive": sum(s.resent for s in sender.sent),
        "non_2xx_by_kind": dict(
            collections.Counter(
                f"{s.kind} {s.status or 'no answer'}" for s in sender.sent if s.status not in (200, 202)
            )
        ),
        "ack_p99_ms": percentile([(s.answered - s.scheduled) * 1000 for s in sender.sent if s.answered], 99),
        "ack_p50_ms": percentile([(s.answered - s.scheduled) * 1000 for s in sender.sent if s.answered], 50),
        "stored_by_status": dict(by_status),
        "attempted_twice": sum(1 for r in mine if r.attempts > 1),
        "finished_twice": logs.count(FINISHED_LATE),
        "processed_by": {pid_roles.get(pid, pid): n for pid, n in owners.items()},
        "acknowledged_by_server": dict(
            collections.Counter(
                f"serve {n % len(servers) + 1}" for n, s in enumerate(sender.sent) if s.status in (200, 202)
            )
        ),
        "sticky_comments_per_pr": sorted(set(sticky.values())),
        "statuses_per_head": sorted(set(statuses.values())),
        "heads_with_more_statuses": [
            {
                "sha": sha[:12],
                "context": context,
                "statuses": n,
                "states": [
                    s["state"]
                    for s in side.emulator.statuses
                    if s["_sha"] == sha and s.get("context") == context
                ],
            }
            for (sha, context), n in statuses.items()
            if n > 1
        ][:5],
        "benches": len(mix.benches),
        "dispatches_per_bench": sorted(set(dispatched.values())),
        "dispatched": len(dispatched),
        "sweeps": sweeps,
        "minutes_running": round((time.monotonic() - mix.started) / 60, 1),
        "failures": collections.Counter(
            f"{r.event}.{r.action} {r.failure}: {(r.error or '')[:160]}" for r in mine if r.status == "failed"
        ).most_common(10),
        "dashboards_agree": all(d == dashboards[0] for d in dashboards),
        "flagged_merges": (dashboards[0] or {}).get("total") if isinstance(dashboards[0], dict) else None,
        "drained_s_after_last": round(drained_s, 1),
        "rss_mb_start": first,
        "rss_mb_end": last,
        "load_average_before": load_before,
        "lag_p99_s_max": max((s["lag_p99_s"] or 0) for s in samples) if samples else None,
    }
    summary["exactly_once"] = all(
        (
            by_status.get("pending", 0) == 0,
            by_status.get("failed", 0) == 0,
            summary["finished_twice"] == 0,
            summary["sticky_comments_per_pr"] in ([1], []),
            summary["dispatches_per_bench"] in ([1], []),
            summary["statuses_per_head"] in ([1], []),
            summary["non_2xx"] == 0,
        )
    )
    return summary


if __name__ == "__main__":
    sys.exit(main())
