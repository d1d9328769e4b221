"""`perfbot sandbox`: the whole bot on this machine, against a local stand-in for GitHub, with the
sample engine as the repository it watches, until Ctrl-C.

It builds the sample repository (`sample.py`) in a folder of its own, with one more commit that
reverts the slow one; starts the stand-in (`github.py`, with the pages of `pages.py`) and
`perfbot serve` on the embedded SQLite defaults in that folder, as the sandbox's GitHub App;
installs the App on the repository (GitHub's `installation` webhook); and plays the runner
(`runner.py`). It opens a pull request that brings the sample's slow commit back (cherry-picked
onto ``master`` after its revert: a reland), which the bot reviews; and it replays the repository's
history as pull requests merged into ``master``, one after another, each reviewed and its merge
benchmarked on this machine's CPU, which fills the dashboard with real merges and a real history
(the slow commit's merge is its change point). What it prints are the addresses of the reland's
thread (the bot's comment, its checks, a form to comment `/bench`) and of the dashboard.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib import request as urlrequest

import bot
from bot.core.config import CONFIG_PATH
from bot.errors import UserError

from . import children, hookshot, identity, mermaid, outcome, payloads, sample
from .github import GitHubEmulator, RepoState
from .pages import Hooks, Site
from .runner import MERGE_MAX_ROUNDS, VERDICT_ROUNDS, Runner

REPO = "sandbox/mini-engine"
DEFAULT_BRANCH = "master"  # as in GitHub's example payloads: those `perfbot deliver` builds fit
USER = "Codertocat"  # the sandbox's user (GitHub's examples' user): a maintainer of the repository
CONTRIBUTOR = "mini-engine-dev"  # who wrote the replayed pull requests: no write access, so no /bench
INSTALLATION_ID = 1
MARKER = ".perfbot-sandbox"  # a folder holding it is the sandbox's own, made afresh each start
SUITES = ("verify-step",)
CASE_WAIT_S = 600  # for the watch's case of a merge that regressed: its bisect, its culprit named
REVERT_SUBJECT = f'Revert "{sample.SLOW_SUBJECT}"'
# The repository's .github/perfbot.yml on master, and the config the runner benchmarks with (as the
# action's `config` input): the sample's suite, lighter for a laptop's CPU; every merge benchmarked.
CONFIG = """\
version: 1
risk:
  profile: generic
  # Every merge is benchmarked for the dashboard's history (bench.dispatch.on_merge: low), also
  # one that scores 0, which is low here.
  thresholds: {low: 0, medium: 30, high: 60}
bench:
  rounds: 3
  # and on to more per side while more rounds would decide: the slow commit's rounds scatter by half
  max_rounds: MERGE_MAX_ROUNDS
  warmup: 0
  suites:
    verify-step:
      kind: verify-step
      allreduce: mini_engine.distributed.parallel_state:tensor_model_parallel_all_reduce
      cpu_world_size: 1
      iters: 20
      warmup_iters: 2
      profile: true
  dispatch:
    auto: never
    on_merge: low
    cooldown: {user: 0, pr: 0}
""".replace("MERGE_MAX_ROUNDS", str(MERGE_MAX_ROUNDS))


class SandboxError(UserError, RuntimeError):
    """The sandbox cannot start: its folder, a port, git, or the server."""


@dataclass(frozen=True)
class Options:
    folder: Path
    host: str = "127.0.0.1"
    port: int = 8010
    github_port: int = 8011
    parallel: int = 1
    merge_rounds: int = VERDICT_ROUNDS


class Sandbox:
    """`run()` starts everything, replays the history, and serves until interrupted."""

    def __init__(self, options: Options, say: Callable[[str], None] = print):
        self.options, self.say = options, say
        self.folder = options.folder.resolve()
        self.secret = secrets.token_hex(16)
        self.key = identity.new_key()
        self.standin = GitHubEmulator()
        self.server: subprocess.Popen | None = None
        self.runner: Runner | None = None
        self.bot_url = f"http://{options.host}:{options.port}"
        self.manifest: dict[str, Any] = {}
        self.merges: list[tuple[int, str, str, str]] = []  # the history: number, title, head, base
        self.started = time.monotonic()
        self._stopping = threading.Event()

    # the whole session

    def run(self) -> int:
        # Every signal it can catch stops it and its children as Ctrl-C does (SIGHUP: the terminal
        # was closed); for SIGKILL, the children have a parent-death signal (`children`).
        previous = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}
        self.started = time.monotonic()
        try:
            self.start()
            self.open_pull_requests()
            self.replay()
            self.conclude()
            self.say(
                f"Try /bench: comment it on {self.standin.base_url}/{REPO}/pull/{self.reland} "
                "(you are Codertocat, a maintainer), or send it as GitHub would:"
            )
            self.say(
                f"  perfbot deliver issue_comment --pull-request {self.reland} --repo {REPO} "
                f'--body "/bench" --to {self.standin.base_url}/webhook --secret {self.secret}'
            )
            self.say("Ctrl-C stops everything.")
            self.watch()
        except KeyboardInterrupt:
            self.say("perfbot sandbox: stopping")
        finally:
            # A second signal while stopping must not cut the stop short.
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                signal.signal(sig, signal.SIG_IGN)
            try:
                self.stop()
            finally:
                signal.signal(signal.SIGINT, signal.default_int_handler)
                for sig, handler in previous.items():
                    signal.signal(sig, handler)
        self.say("perfbot sandbox: stopped")
        return 0

    def start(self) -> None:
        for port, option in ((self.options.port, "--port"), (self.options.github_port, "--github-port")):
            if not _free(self.options.host, port):
                raise SandboxError(
                    f"{self.options.host}:{port} is in use (another perfbot?): choose another "
                    f"port with {option}"
                )
        _fresh(self.folder)
        checkout = self.folder / "mini-engine"
        self.manifest = sample.build(checkout)
        self.manifest["revert"] = _revert(checkout, self.manifest)
        self.manifest["reland"] = _reland(checkout, self.manifest)
        config = self.folder / "perfbot.yml"
        config.write_text(CONFIG)
        self._stand_in()
        self.say(
            f"perfbot sandbox: everything lives in {self.folder} "
            f"(the bot's log: {self.folder / 'perfbot.log'})"
        )
        self.say(f"  GitHub stand-in  {self.standin.base_url}  holds {REPO}, the sample engine")
        cannot = _cannot_benchmark()
        self.runner = Runner(
            self.standin,
            REPO,
            checkout,
            self.folder,
            config,
            self._send,
            self._workflow_run,
            parallel=self.options.parallel,
            merge_rounds=self.options.merge_rounds,
            can_measure=cannot,
            env=_child_env(),
        ).start()
        # The merges are measured ahead of their dispatches, in order, from now on: while the bot
        # starts and reviews, most of the time it all takes is these measurements.
        self.merges = self._history()
        for _, _, head, base in self.merges:
            self.runner.prepare(self.runner.merge_key(base, head, SUITES))
        self._serve()
        self.say(f"  perfbot serve    {self.bot_url}  (SQLite files in the folder)")
        self._send("installation", self._installation())
        if cannot:
            self.say(
                f"perfbot sandbox: no benchmarks on this machine ({cannot}); reviews and merges still run"
            )

    def stop(self) -> None:
        self._stopping.set()
        if self.runner is not None:
            self.runner.stop()
        if self.server is not None and self.server.poll() is None:
            self.server.send_signal(signal.SIGTERM)  # perfbot serve stops its workers and consumers
            try:
                self.server.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.server.pid, signal.SIGKILL)
                self.server.wait()
        self.standin.stop()

    # the world

    def _stand_in(self) -> None:
        identity.trust(self.standin, self.key)
        self.standin.web_links = self.standin.stamped = True
        state = self.standin.add_repo(REPO, DEFAULT_BRANCH)
        state.files[(DEFAULT_BRANCH, CONFIG_PATH)] = CONFIG
        commits = [c["sha"] for c in self.manifest["commits"]]
        commits += [self.manifest["revert"], self.manifest["reland"]]
        state.parents.update({sha: ([commits[i - 1]] if i else []) for i, sha in enumerate(commits)})
        state.branches[DEFAULT_BRANCH] = commits[0]
        state.permissions[USER] = "admin"
        self.standin.add_workflow(REPO)
        self.client_id, self.client_secret = "Iv1.sandbox", secrets.token_hex(20)
        self.standin.add_oauth_app(self.client_id, self.client_secret)
        try:
            self.standin.start(self.options.host, self.options.github_port)
        except OSError as error:
            where = f"{self.options.host}:{self.options.github_port}"
            raise SandboxError(
                f"cannot listen on {where} for the GitHub stand-in ({error.strerror}): "
                "choose another with --github-port"
            ) from None
        hooks = Hooks(self._send, self._forward, self.secret, INSTALLATION_ID)
        self.standin.site = Site(self.standin, hooks, USER, f"{self.bot_url}/", self._mermaid())

    def _mermaid(self) -> Path | str:
        """mermaid.min.js for the thread page, cached beside the sandbox's folder (which is emptied
        at each start), or why there is none."""
        try:
            return mermaid.script(self.folder.parent)
        except (mermaid.Unavailable, OSError) as error:
            self.say(f"perfbot sandbox: the thread page shows charts as their source: {error}")
            return str(error)

    def _serve(self) -> None:
        """`perfbot serve` in the folder, as the sandbox's App, until it answers /healthz."""
        env = _child_env() | {
            "PERFBOT_WEBHOOK_SECRET": self.secret,
            "PERFBOT_APP_ID": str(identity.APP_ID),
            "PERFBOT_PRIVATE_KEY": self.key.private_pem,
            "PERFBOT_GITHUB_API_URL": self.standin.base_url,
            "PERFBOT_GITHUB_WEB_URL": self.standin.base_url,
            "PERFBOT_PUBLIC_URL": self.bot_url,
            "PERFBOT_OAUTH_CLIENT_ID": self.client_id,
            "PERFBOT_OAUTH_CLIENT_SECRET": self.client_secret,
            "PERFBOT_SESSION_SECRET": secrets.token_hex(32),
        }
        log = (self.folder / "perfbot.log").open("ab")
        command = [
            sys.executable,
            "-m",
            "bot",
            "serve",
            "--host",
            self.options.host,
            "--port",
            str(self.options.port),
        ]
        server = self.server = subprocess.Popen(
            command,
            cwd=self.folder,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # the terminal's Ctrl-C is the sandbox's to handle
            preexec_fn=children.dying_with_this_process(),
        )
        log.close()
        if not self._until(lambda: server.poll() is not None or _healthy(self.bot_url), 120):
            raise SandboxError(f"perfbot serve did not answer in 120 s: see {self.folder / 'perfbot.log'}")
        if server.poll() is not None:
            tail = (self.folder / "perfbot.log").read_text(errors="replace").strip().splitlines()[-3:]
            raise SandboxError(f"perfbot serve exited: {' / '.join(tail)}")

    # the pull requests

    def _history(self) -> list[tuple[int, str, str, str]]:
        """The history's pull requests to merge: number, title, head and base, in order."""
        commits = self.manifest["commits"][1:] + [{"sha": self.manifest["revert"], "subject": REVERT_SUBJECT}]
        parents = [self.manifest["first"]] + [c["sha"] for c in commits[:-1]]
        return [(n, c["subject"], c["sha"], parents[n - 1]) for n, c in enumerate(commits, start=1)]

    def open_pull_requests(self) -> None:
        """The history's pull requests, and the one that brings the slow commit back."""
        for number, title, head, base in self.merges:
            self._open(number, title, head, base, DEFAULT_BRANCH, CONTRIBUTOR)
        self.reland = len(self.merges) + 1
        slow = next(number for number, _, sha, _ in self.merges if sha == self.manifest["slow"])
        self._open(
            self.reland,
            f"{sample.SLOW_SUBJECT} (reland of #{slow})",
            self.manifest["reland"],
            self.manifest["revert"],
            DEFAULT_BRANCH,
            CONTRIBUTOR,
        )
        thread = f"{self.standin.base_url}/{REPO}/pull/{self.reland}"
        if not self._until(
            lambda: any(c["user"]["type"] == "Bot" for c in self.standin.comments_on(REPO, self.reland)), 120
        ):
            raise SandboxError(
                f"the bot did not comment on {thread} in 120 s: see {self.folder / 'perfbot.log'}"
            )
        self.say(f"Pull request #{self.reland}, as the bot wrote it:  {thread}   ({self._took()})")
        self.say(f"Dashboard:                              {self.bot_url}/")

    def _open(self, number: int, title: str, head: str, base: str, branch: str, author: str) -> None:
        diff = sample.git(self.folder / "mini-engine", "diff", base, head) + "\n"
        ref = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:40]
        self.standin.add_pull(
            REPO, number, head, diff, base_sha=base, base_ref=branch, author=author, title=title, head_ref=ref
        )
        self._send("pull_request", self._pull_payload("opened", number))

    def replay(self) -> None:
        """Merge the history's pull requests one after another, each once the previous merge's
        benchmark is in: the history's points then follow the merges, and each change point falls
        between the merges that caused it."""
        self.say(
            f"Replaying the engine's history: {len(self.merges)} pull requests merged into "
            f"{DEFAULT_BRANCH}, each benchmarked on this machine's CPU ..."
        )
        if self.options.merge_rounds < VERDICT_ROUNDS:
            rounds = self.options.merge_rounds
            self.say(
                f"  (quick mode: {rounds} round{'s' if rounds > 1 else ''} per side, enough for the "
                "history's points, too few for a verdict: every merge stays inconclusive and the "
                f"calibration page has no outcomes; --merge-rounds {VERDICT_ROUNDS} or more lets the "
                "statistics decide, in about that many times as long)"
            )
        for done, (number, title, sha, _) in enumerate(self.merges, start=1):
            self._merge(number, sha)
            ok = self._until(functools.partial(self._benchmarked, sha), 900)
            said = "benchmarked" if ok else "not benchmarked in 15 minutes"
            self.say(f"  [{done}/{len(self.merges)}] #{number} {title}: merged, {said}   ({self._took()})")
        self.say(f"History filled: {self.bot_url}/history   (the merges: {self.bot_url}/)   ({self._took()})")

    def conclude(self) -> None:
        """What the watch and the calibration made of the history, as the dashboard's API gives
        them: the case of a merge that regressed (waited for until its bisect ended and a culprit
        it confirmed is named on its pull request), the calibration's outcomes, and the time it
        all took, with the machine's load (a shared machine's other work slows every benchmark)."""
        merges = self._api("merges")["items"]
        if outcome.regressed(merges):
            cases: list[dict[str, Any]] = []

            def ended() -> bool:
                cases[:] = self._api("regressions")["cases"]
                return outcome.settled(cases)

            if not self._until(ended, CASE_WAIT_S):
                self.say(f"  (the watch's case had not ended after {CASE_WAIT_S} s: it stands as below)")
            for line in outcome.case_lines(cases, self.bot_url) or ["No regression case yet"]:
                self.say(f"{line}   ({self._took()})")
        else:
            self.say(outcome.no_case_line(self.options.merge_rounds, VERDICT_ROUNDS))
        self.say(outcome.calibration_line(self._api("calibration"), merges, self.bot_url))
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        busy = f", load average {load:.1f} on {os.cpu_count()} cores" if load is not None else ""
        self.say(f"Every page filled after {self._took()}{busy}")

    def _api(self, path: str) -> dict[str, Any]:
        """The dashboard's JSON API (``/api/v1/<path>``) of the sandbox's repository."""
        url = f"{self.bot_url}/api/v1/{path}?repo={REPO}"
        try:
            with urlrequest.urlopen(url, timeout=30) as answer:  # nosec B310: the sandbox's own server
                return json.load(answer)
        except (OSError, ValueError) as error:  # the bot stopped, or answered what is no JSON
            raise SandboxError(f"{url}: {error}: see {self.folder / 'perfbot.log'}") from None

    def _merge(self, number: int, sha: str) -> None:
        # GitHub's merged_at has whole seconds: merging in the second after the previous merge's
        # results were stored keeps this merge after that point of the history, as it happened.
        time.sleep(1 - time.time() % 1 + 0.01)
        with self.standin.lock:
            state: RepoState = self.standin.repos[REPO]
            pull = state.pulls[number]
            pull.state, pull.merged = "closed", True
            state.branches[DEFAULT_BRANCH] = sha
        self._send("pull_request", self._pull_payload("closed", number))

    def _benchmarked(self, sha: str) -> bool:
        """The merge's benchmark check run has concluded (or the bot gave up on starting one)."""
        checks = [c for c in self.standin.checks_for(REPO, sha) if c["name"] == "perfbot / bench"]
        return bool(checks) and all(c["status"] == "completed" for c in checks)

    def watch(self) -> None:
        """Until interrupted: say when a pull request's benchmark comes back (not a merge's, nor a
        bisect the watch asked for)."""
        said = 0
        while not self._stopping.wait(0.5):
            finished = [f for f in (self.runner.finished if self.runner else []) if f["pull"]]
            for run in finished[said:]:
                seconds = run["measured"].seconds
                self.say(
                    f"  a /bench came back after {seconds:.0f} s of benchmarking: "
                    f"{self.standin.base_url}/{REPO}/pull/{self.reland}"
                )
            said = len(finished)

    # deliveries

    def _send(self, event: str, payload: dict[str, Any]) -> hookshot.Answer:
        """Deliver ``event`` to the bot as GitHub would, its addresses pointing at the stand-in."""
        text = json.dumps(payload).replace("https://api.github.com", self.standin.base_url)
        body = text.replace("https://github.com/", f"{self.standin.base_url}/").encode()
        headers = hookshot.headers(event, body, self.secret, str(uuid.uuid4()), payload=payload)
        return self._forward(body, headers)

    def _forward(self, body: bytes, headers: dict[str, str]) -> hookshot.Answer:
        try:
            return hookshot.post(f"{self.bot_url}/webhook", body, headers, timeout=30)
        except hookshot.Unreachable as error:
            return hookshot.Answer(502, "Bad Gateway", str(error))

    def _installation(self) -> dict[str, Any]:
        payload = payloads.installation_event("installation", "created")
        payload["installation"].update(id=INSTALLATION_ID, app_id=identity.APP_ID, app_slug=identity.APP_SLUG)
        owner, name = REPO.split("/")
        payload["repositories"] = [
            {**payload["repositories"][0], "full_name": REPO, "name": name, "private": False}
        ]
        payload["installation"]["account"] = {**payload["installation"]["account"], "login": owner}
        return payload

    def _pull_payload(self, action: str, number: int) -> dict[str, Any]:
        with self.standin.lock:
            pull = self.standin.repos[REPO].pulls[number]
            payload = payloads.pull_request(
                action, head_sha=pull.head_sha, number=number, repo=REPO, installation_id=INSTALLATION_ID
            )
            pr = payload["pull_request"]
            pr.update(title=pull.title, state=pull.state)
            pr["user"] = {**pr["user"], "login": pull.author}
            pr["base"].update(ref=pull.base_ref, sha=pull.base_sha)
            pr["head"]["ref"] = pull.head_ref
            if action == "closed":
                now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
                pr.update(closed_at=now, merged_at=now, merge_commit_sha=pull.head_sha)  # a rebase merge
                pr["merged_by"] = {**pr["user"], "login": USER}
        for holder in (payload["repository"], pr["base"]["repo"], pr["head"]["repo"]):
            holder["default_branch"] = DEFAULT_BRANCH
        payload["sender"] = {**payload["sender"], "login": USER if action == "closed" else pull.author}
        return payload

    def _workflow_run(self, action: str, run: dict[str, Any]) -> dict[str, Any]:
        payload = payloads.workflow_run(action, run, repo=REPO, installation_id=INSTALLATION_ID)
        payload["repository"]["default_branch"] = DEFAULT_BRANCH
        return payload

    def _took(self) -> str:
        return f"{time.monotonic() - self.started:.0f} s"

    def _until(self, condition: Callable[[], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                return False
            if self._stopping.wait(0.1):
                raise KeyboardInterrupt
        return True


def _fresh(folder: Path) -> None:
    """``folder``, empty: made, or emptied when a previous sandbox left it (never another folder,
    nor one a running sandbox uses)."""
    marker = folder / MARKER
    if folder.exists() and any(folder.iterdir()):
        if not marker.is_file():
            raise SandboxError(f"{folder}: exists and is no sandbox folder: choose another with --dir")
        owner = marker.read_text().split()[0] if marker.read_text().strip() else ""
        if owner.isdigit() and _running(int(owner)):
            raise SandboxError(
                f"{folder}: a running perfbot sandbox (pid {owner}) uses it: choose another with --dir"
            )
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    marker.write_text(f"{os.getpid()}\nmade by perfbot sandbox (its process id), emptied at its next start\n")


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return pid != os.getpid()


def _revert(checkout: Path, manifest: dict[str, Any]) -> str:
    """The commit that reverts the slow one, on top of the sample's history."""
    message = f"{REVERT_SUBJECT}\n\nThis reverts commit {manifest['slow']}."
    return _commit_files(checkout, sample.before_slow_files(), message, len(sample.HISTORY), manifest["head"])


def _reland(checkout: Path, manifest: dict[str, Any]) -> str:
    """The slow commit cherry-picked onto its revert: the same change, a new commit."""
    return _commit_files(
        checkout, sample.slow_files(), sample.SLOW_SUBJECT, len(sample.HISTORY) + 1, manifest["revert"]
    )


def _commit_files(checkout: Path, files: dict[str, str], message: str, hour: int, parent: str) -> str:
    for path, text in files.items():
        (checkout / path).write_text(text)
    sample.git(checkout, "add", "--", *files)
    return sample.commit(checkout, message, sample.START + timedelta(hours=hour), parent)


def _cannot_benchmark() -> str | None:
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        return "the CPU suite needs torch, which this install lacks: `make install` installs it"
    return None


def _child_env() -> dict[str, str]:
    """This process's environment without PERFBOT_* settings, with this perfbot importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERFBOT_")}
    root = str(Path(bot.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
    return env


def _free(host: str, port: int) -> bool:
    import socket

    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def _healthy(base: str) -> bool:
    with contextlib.suppress(OSError), urlrequest.urlopen(f"{base}/healthz", timeout=2) as answer:  # nosec B310
        return answer.status == 200
    return False


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
