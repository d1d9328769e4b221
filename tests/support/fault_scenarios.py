"""The fault scenarios, each a function of its size returning its `Figures`: the tests in
tests/faults run them small, `benchmarks/bench_faults.py` at full size."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from bot.adapters.github_client import PyGithubFactory, retry_policy
from bot.bootstrap import build
from bot.core.render.comment import MARKER
from bot.settings import Settings
from bot.web.app import create_app
from tests.core.judge.results_data import BASE_SHA, HEAD_SHA
from tests.emulator import live
from tests.emulator.bench_support import NUMBER
from tests.service import diffs

from . import github_data
from .faults import (
    SECRET,
    Deliveries,
    Figures,
    Postgres,
    Redis,
    Server,
    Stream,
    Worker,
    chattr,
    fill,
    health,
    installation_deliveries,
    judge,
    perfbot_env,
    signed,
    tmpfs,
)
from .github_emulator import GitHubEmulator, wait_for

FINISHED_LATE = "finished after its lease had run out"  # jobs' warning: a delivery was run twice


def _doubled(*logs: str) -> int:
    return sum(log.count(FINISHED_LATE) for log in logs)


class HealthPolls:
    """`/healthz` asked every 0.25 s from a thread while a fault lasts: how often it said down, and
    how often it said up though the intake had refused a delivery in the 0.5 s before it was asked."""

    def __init__(self, base: str, stream: Stream):
        self.base, self.stream = base, stream
        self.answers: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> HealthPolls:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _poll(self) -> None:
        while not self._stop.wait(0.25):
            asked = time.monotonic()
            self.answers.append((asked, health(self.base)[0]))

    def until_asked_after_a_refusal(self, timeout: float = 30.0) -> None:
        """Wait until the intake has refused a delivery and `/healthz` has been asked since: what
        the fault is there to show, however slowly the machine runs. A fixed share of the stream
        was not enough on a loaded machine: the first refusal came after the last of three polls.
        Bounded: a fault that refuses nothing still ends (and its test fails on that)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            refused = [s.answered for s in list(self.stream.sent) if s.status == 503 and s.answered]
            if refused and any(at > min(refused) for at, _ in list(self.answers)):
                return
            time.sleep(0.05)

    def line(self) -> str:
        refused = [s.answered for s in self.stream.sent if s.status == 503]
        up_while_refusing = sum(
            1 for at, status in self.answers if status == 200 and any(at - 0.5 <= r < at for r in refused)
        )
        down = sum(1 for _, status in self.answers if status == 503)
        return f"/healthz during the fault: {down} of {len(self.answers)} down, {up_while_refusing} up while refusing"


def _retried(deliveries: Deliveries) -> int:
    return sum(1 for _, attempts in deliveries.statuses().values() if attempts > 1)


def killed_mid_stream(workdir: Path, count: int = 200, rate: float = 40.0) -> Figures:
    """`perfbot serve` (SQLite, its supervised consumer): the consumer killed with SIGKILL at 30%
    of the stream (the server starts another), the whole server (master, web worker, consumer) at
    45%, and started again on the same port."""
    server = Server(workdir, perfbot_env()).start()
    deliveries = Deliveries(f"sqlite:///{workdir / 'perfbot.db'}")
    stream = Stream([server.base], installation_deliveries(count), rate).start()
    try:
        stream.wait_until(0.3)
        for pid in server.consumers():
            os.kill(pid, signal.SIGKILL)
        stream.wait_until(0.45)
        server.kill()
        server.start()
        fault_ended = time.monotonic()
        stream.join()
        figures = judge(
            "consumer, then server, killed with SIGKILL mid-stream",
            stream,
            deliveries,
            fault_ended,
            doubled=lambda: _doubled(server.log()),
        )
        figures.notes.append(
            f"attempted twice {_retried(deliveries)}, repositories {deliveries.repositories()}"
        )
        return figures
    finally:
        server.stop()
        deliveries.close()


def services_restarted(workdir: Path, count: int = 200, rate: float = 40.0) -> Figures:
    """`perfbot serve` and a `perfbot worker` on PostgreSQL and Redis of their own: PostgreSQL
    restarted at 25% of the stream, Redis (coming back empty) at 60%. The intake may answer 503
    only while PostgreSQL is down."""
    postgres, redis = Postgres().start(), Redis(workdir).start()
    env = perfbot_env(PERFBOT_DATABASE_URL=postgres.url, PERFBOT_QUEUE_URL=redis.url)
    server = Server(workdir, env).start()
    worker = Worker(workdir, env, ["--threads", "4"]).start()
    deliveries = Deliveries(postgres.url)
    assert wait_for(lambda: health(server.base)[1].get("consumers"), timeout=60), worker.log()[-3000:]
    stream = Stream([server.base], installation_deliveries(count), rate).start()
    try:
        stream.wait_until(0.25)
        pg_down, pg_up = postgres.restart(down_s=1.0)
        stream.wait_until(0.6)
        _, redis_up = redis.restart(down_s=1.0)
        stream.join()
        figures = judge(
            "PostgreSQL, then Redis, restarted mid-stream",
            stream,
            deliveries,
            redis_up,
            doubled=lambda: _doubled(server.log(), worker.log()),
        )
        outside = [
            s for s in stream.sent if s.status == 503 and not pg_down - 0.5 <= s.answered <= pg_up + 3.0
        ]
        figures.notes.append(
            f"PostgreSQL down {pg_up - pg_down:.1f} s; 503 outside that window {len(outside)}"
        )
        figures.notes.append(f"attempted twice {_retried(deliveries)}")
        return figures
    finally:
        server.stop()
        worker.stop()
        deliveries.close()
        redis.stop()
        postgres.stop()


def disk_full(workdir: Path, count: int = 150, rate: float = 30.0) -> Figures | None:
    """`perfbot serve` (SQLite) on a small tmpfs that fills up at 30% of the stream and is freed
    at 60%, or later: once a delivery was refused and `/healthz` asked since (SQLite writes into
    the free pages of its files for a while after the disk is full, and `/healthz` rightly says
    up meanwhile); None where no tmpfs can be mounted (not root)."""
    with tmpfs("16m") as folder:
        if folder is None:
            return None
        server = Server(folder, perfbot_env(), logs=workdir).start()
        deliveries = Deliveries(f"sqlite:///{folder / 'perfbot.db'}")
        stream = Stream([server.base], installation_deliveries(count), rate).start()
        try:
            stream.wait_until(0.3)
            filler = fill(folder)
            with HealthPolls(server.base, stream) as polls:
                stream.wait_until(0.6)
                polls.until_asked_after_a_refusal()
            filler.unlink()
            fault_ended = time.monotonic()
            stream.join()
            figures = judge(
                "disk full (SQLite on a 16 MB tmpfs)",
                stream,
                deliveries,
                fault_ended,
                doubled=lambda: _doubled(server.log()),
            )
            figures.notes.append(polls.line())
            figures.notes.append(f"server up after: {server.process.poll() is None}")
            return figures
        finally:
            server.stop()
            deliveries.close()


def files_immutable(workdir: Path, count: int = 150, rate: float = 30.0) -> Figures | None:
    """`perfbot serve` (SQLite) whose files are made immutable (``chattr +i``) at 30% of the
    stream and writable again at 60%: no process may die of SIGBUS, the master stays up; None
    where ``chattr`` cannot be used."""
    server = Server(workdir, perfbot_env()).start()
    deliveries = Deliveries(f"sqlite:///{workdir / 'perfbot.db'}")
    stream = Stream([server.base], installation_deliveries(count), rate).start()
    try:
        stream.wait_until(0.3)
        files = sorted(p for p in workdir.iterdir() if ".db" in p.name)
        if not chattr("+i", files):
            return None
        try:
            with HealthPolls(server.base, stream) as polls:
                stream.wait_until(0.6)
        finally:
            chattr("-i", files)
        fault_ended = time.monotonic()
        stream.join()
        figures = judge(
            "SQLite files made immutable mid-stream",
            stream,
            deliveries,
            fault_ended,
            doubled=lambda: _doubled(server.log()),
        )
        log = server.log()
        figures.notes.append(polls.line())
        figures.notes.append(
            f"SIGBUS in the log {log.count('SIGBUS')}; master up {server.process.poll() is None}"
        )
        return figures
    finally:
        server.stop()
        deliveries.close()


def wait_consumers(server: Server, timeout: float = 60.0) -> list[int]:
    wait_for(lambda: server.consumers(), timeout=timeout, interval=0.1)
    return server.consumers()


# ------------------------------------------------------------------ with the GitHub API emulator


@dataclass(frozen=True)
class MidJob:
    """A consumer killed while a job waited on GitHub: how long until it was done, and what
    GitHub was asked to do meanwhile."""

    review_s: float
    comments: int
    checks: int
    dispatch_s: float
    dispatches: int

    def line(self) -> str:
        return (
            f"consumer killed with SIGKILL mid-review: done {self.review_s:.1f} s later, sticky comments "
            f"{self.comments}, check runs {self.checks}; mid-dispatch: done {self.dispatch_s:.1f} s later, "
            f"workflows dispatched {self.dispatches}"
        )


def _app_repository(emulator: GitHubEmulator, app_key: tuple[str, str]) -> None:
    live.trust_app(emulator, app_key)
    live.add_repository(emulator, diffs.BASE_CONFIG, {"maintainer": "write"})


def _app_env(emulator: GitHubEmulator, app_key: tuple[str, str], **more: str) -> dict[str, str]:
    return perfbot_env(
        PERFBOT_APP_ID=str(live.APP_ID),
        PERFBOT_PRIVATE_KEY=app_key[0],
        PERFBOT_GITHUB_API_URL=emulator.base_url,
        **more,
    )


def _kill_when_held(server: Server, held, deliveries: Deliveries, guid: str, timeout: float = 60.0) -> float:
    """Once the job waits on the held request, SIGKILL the consumers; the seconds from the kill
    until the delivery is done."""
    assert held.reached.wait(timeout), server.log()[-3000:]
    killed = time.monotonic()
    for pid in server.consumers():
        os.kill(pid, signal.SIGKILL)
    held.release.set()
    done = wait_for(
        lambda: deliveries.statuses().get(guid, ("", 0))[0] == "done", timeout=timeout, interval=0.1
    )
    assert done, f"not done {timeout:.0f} s after the kill: {deliveries.statuses()}\n{server.log()[-3000:]}"
    return time.monotonic() - killed


def consumer_killed_mid_job(emulator: GitHubEmulator, app_key: tuple[str, str], workdir: Path) -> MidJob:
    """`perfbot serve` in App mode over the emulator. The sticky comment of a review is created, but
    its consumer is killed before it hears back; then a `/bench` is dispatched, and its consumer is
    killed before it hears back. The consumer started in the dead one's place takes both over."""
    _app_repository(emulator, app_key)
    emulator.add_pull(live.REPO, NUMBER, HEAD_SHA, diffs.HIGH, base_sha=BASE_SHA)
    server = Server(workdir, _app_env(emulator, app_key)).start()
    deliveries = Deliveries(f"sqlite:///{workdir / 'perfbot.db'}")
    try:
        wait_consumers(server)
        held = emulator.hold("POST", rf"/issues/{NUMBER}/comments$")
        review = github_data.pull_request("opened", head_sha=HEAD_SHA, number=NUMBER, installation_id=1)
        guid = _post(server, "pull_request", review)
        review_s = _kill_when_held(server, held, deliveries, guid)
        wait_consumers(server)
        posted = emulator.add_comment(live.REPO, NUMBER, "/bench", "maintainer")
        held = emulator.hold("POST", r"/dispatches$")
        command = github_data.issue_comment(
            "/bench",
            number=NUMBER,
            repo=live.REPO,
            installation_id=1,
            login="maintainer",
            comment_id=posted["id"],
        )
        guid = _post(server, "issue_comment", command)
        dispatch_s = _kill_when_held(server, held, deliveries, guid)
        sticky = [c for c in emulator.comments_on(live.REPO, NUMBER) if c["body"].startswith(MARKER)]
        checks = [r for r in emulator.checks_for(live.REPO, HEAD_SHA) if r["name"] == "perfbot / risk"]
        return MidJob(
            review_s=review_s,
            comments=len(sticky),
            checks=len(checks),
            dispatch_s=dispatch_s,
            dispatches=len(emulator.dispatches),
        )
    finally:
        for hold in emulator.holds:
            hold.release.set()
        server.stop()
        deliveries.close()


def _post(server: Server, event: str, payload: dict) -> str:
    body = json.dumps(payload).encode()
    stream = Stream([server.base], [(event, body)], rate=1000).start()
    stream.join()
    [sent] = stream.sent
    assert sent.status == 202, (sent.status, server.log()[-3000:])
    return sent.guid


def github_faults(
    emulator: GitHubEmulator, app_key: tuple[str, str], workdir: Path, reviews: int = 6
) -> Figures:
    """Reviews of ``reviews`` pull requests in App mode while GitHub answers 500 and 502 (a
    comment made but answered 502), is too slow for the client's timeout, hits a secondary rate
    limit with Retry-After, refuses an installation token once (401), and keeps failing a
    check-run listing past the client's own retries. Every review must end with one sticky
    comment and one check run."""
    _app_repository(emulator, app_key)
    shas = [f"{n:040x}" for n in range(1, reviews + 1)]
    for number, sha in enumerate(shas, 1):
        emulator.add_pull(live.REPO, number, sha, diffs.HIGH, base_sha=BASE_SHA)
    emulator.fail("POST", r"/issues/\d+/comments$", 502, after=True)
    emulator.fail("GET", r"/pulls/\d+$", 500, times=2)
    emulator.slow("GET", r"/pulls/\d+$", seconds=3.0)
    emulator.fail("GET", r"/contents/", 403, headers={"Retry-After": "1"}, body=SECONDARY_RATE_LIMIT)
    emulator.fail("POST", r"/check-runs$", 401, body={"message": "Bad credentials"})
    emulator.fail("GET", r"/check-runs$", 502, times=6)
    settings = Settings(
        webhook_secrets=(SECRET,),
        app_id=live.APP_ID,
        private_key=app_key[0],
        github_api_url=emulator.base_url,
        database_url=f"sqlite:///{workdir / 'perfbot.db'}",
        queue_url=f"sqlite:///{workdir / 'queue.db'}",
    )
    github = PyGithubFactory(settings, retry=retry_policy(total=3, backoff=0.05, secondary_wait=1), timeout=2)
    runtime = build(settings, github=github, retry_delay=0.5)
    consumer = runtime.start_consumer(2)
    client = create_app(settings, runtime.services).test_client()
    deliveries = Deliveries(settings.database_url)
    started = time.monotonic()
    try:
        guids = []
        for number, sha in enumerate(shas, 1):
            payload = json.dumps(
                github_data.pull_request("opened", head_sha=sha, number=number, installation_id=1)
            )
            guid = str(uuid.uuid4())
            response = client.post(
                "/webhook", data=payload, headers=signed("pull_request", payload.encode(), guid)
            )
            assert response.status_code == 202
            guids.append(guid)

        def finished() -> bool:
            statuses = deliveries.statuses()
            return all(statuses.get(g, ("pending", 0))[0] != "pending" for g in guids)

        wait_for(finished, timeout=120, interval=0.2)
        statuses = deliveries.statuses()
        comments = [
            len([c for c in emulator.comments_on(live.REPO, n) if c["body"].startswith(MARKER)])
            for n in range(1, reviews + 1)
        ]
        checks = [len(emulator.checks_for(live.REPO, sha)) for sha in shas]
        done = sum(1 for g in guids if statuses[g][0] == "done")
        attempts = sum(statuses[g][1] for g in guids)
        return Figures(
            scenario="GitHub answering 500/502, too slow, rate-limited and refusing a token (401)",
            sent=reviews,
            acknowledged=reviews,
            refused=0,
            unanswered=0,
            processed=done,
            lost=reviews - done,
            doubled=sum(max(0, n - 1) for n in comments) + sum(max(0, n - 1) for n in checks),
            recover_s=time.monotonic() - started,
            notes=[
                f"sticky comments per PR {sorted(set(comments))}, check runs per head {sorted(set(checks))}",
                f"attempts {attempts} for {reviews} reviews",
                f"invalid requests {len(emulator.invalid)}",
            ],
        )
    finally:
        consumer.stop(graceful=True)
        runtime.close()
        deliveries.close()


SECONDARY_RATE_LIMIT = {
    "message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
    "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
}


def without_credentials(workdir: Path, count: int = 3) -> tuple[list[str], Figures]:
    """`perfbot serve` with no GitHub credentials (`make run` before the App is set up) receiving
    ``count`` pull requests: the log lines about them, and the figures."""
    server = Server(workdir, perfbot_env(PERFBOT_LOG_LEVEL="INFO")).start()
    deliveries = Deliveries(f"sqlite:///{workdir / 'perfbot.db'}")
    try:
        body = [
            (
                "pull_request",
                json.dumps(github_data.pull_request("opened", head_sha=f"{n:040x}", number=n)).encode(),
            )
            for n in range(1, count + 1)
        ]
        stream = Stream([server.base], body, rate=10).start()
        stream.join()
        guids = {s.guid for s in stream.sent}
        wait_for(
            lambda: all(deliveries.statuses().get(g, ("pending",))[0] != "pending" for g in guids), timeout=60
        )
        statuses = deliveries.statuses()
        failed = sum(1 for g in guids if statuses[g] == ("failed", 1))
        lines = [line for line in server.log().splitlines() if any(g in line for g in guids)]
        return lines, Figures(
            scenario="no GitHub credentials",
            sent=count,
            acknowledged=len(stream.acknowledged()),
            refused=0,
            unanswered=0,
            processed=0,
            lost=0,
            doubled=0,
            recover_s=0.0,
            notes=[f"failed at once (1 attempt) {failed}"],
        )
    finally:
        server.stop()
        deliveries.close()
