"""No crossed answers under load: 2,000 signed `pull_request` deliveries at 50/s over many pull
requests, handled by a consumer with 4 threads that share one GitHub client factory, all real but
GitHub (Flask intake, the SQLite queue, PyGithub against the GitHub API emulator). Each push also asks
its author's permission, so that answers about different pull requests and logins are in flight at
once. At the end every pull request must carry exactly one sticky comment, written for its own
newest head: a client shared between threads hands one thread's response to another (PyGithub's
connection answers one request at a time), and a review then lands on the wrong pull request or
names the wrong head. This is what the per-thread clients prevent.

    .venv/bin/python benchmarks/bench_crossed_answers.py                   # 2,000 at 50/s, 4 threads
    .venv/bin/python benchmarks/bench_crossed_answers.py --deliveries 400  # a quicker look

It prints what was sent, acknowledged, processed, and every crossing it found (none expected).
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.core.config.schema import CONFIG_PATH  # noqa: E402
from bot.core.render.comment import MARKER  # noqa: E402
from tests.emulator import live  # noqa: E402
from tests.service import diffs  # noqa: E402
from tests.support import github_data  # noqa: E402
from tests.support.github_emulator import GitHubEmulator  # noqa: E402

HEAD = re.compile(r"head `([0-9a-f]{12})`")


def head_sha(number: int, push: int) -> str:
    return f"{number:08x}{push:08x}".ljust(40, "a")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deliveries", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=50.0, help="deliveries per second (default 50)")
    parser.add_argument("--pulls", type=int, default=200, help="pull requests the pushes spread over")
    parser.add_argument("--threads", type=int, default=4, help="consumer threads (default 4)")
    args = parser.parse_args()
    emulator = GitHubEmulator().start()
    folder = Path(tempfile.mkdtemp(prefix="perfbot-crossed-"))
    state = emulator.add_repo(live.REPO, live.DEFAULT_BRANCH)
    # Automatic benchmarks are never wanted, but every push asks its author's permission, so that
    # answers for different logins are in flight at once.
    state.files[(live.DEFAULT_BRANCH, CONFIG_PATH)] = diffs.BASE_CONFIG + "bench:\n  dispatch: {auto: high}\n"
    for number in range(1, args.pulls + 1):
        login = f"author{number}"
        state.permissions[login] = ("read", "triage")[number % 2]  # never write: nothing is dispatched
        emulator.add_pull(live.REPO, number, head_sha(number, 0), diffs.HIGH, author=login)
    bot = live.start(
        emulator,
        f"sqlite:///{folder / 'perfbot.db'}",
        f"sqlite:///{folder / 'queue.db'}",
        app_key=None,
        workers=args.threads,
    )
    pushes = dict.fromkeys(range(1, args.pulls + 1), 0)
    acknowledged, started = 0, time.monotonic()
    try:
        for index in range(args.deliveries):
            number = index % args.pulls + 1
            pushes[number] += 1
            sha = head_sha(number, pushes[number])
            emulator.repos[live.REPO].pulls[number].head_sha = sha
            action = "opened" if pushes[number] == 1 else "synchronize"
            payload = github_data.pull_request(action, head_sha=sha, number=number, repo=live.REPO)
            payload.pop("installation", None)
            payload["pull_request"]["user"]["login"] = f"author{number}"
            acknowledged += bot.deliver("pull_request", payload).status_code == 202
            time.sleep(max(0.0, started + (index + 1) / args.rate - time.monotonic()))
        sent_s = time.monotonic() - started
        bot.wait_idle(timeout=1800)
        drained_s = time.monotonic() - started
        counts = bot.runtime.store.deliveries.counts()
        crossings = []
        for number in range(1, args.pulls + 1):
            newest = head_sha(number, pushes[number])
            bodies = [c["body"] for c in emulator.comments_on(live.REPO, number)]
            sticky = [body for body in bodies if body.startswith(MARKER)]
            heads = HEAD.findall(sticky[0]) if len(sticky) == 1 else []
            if len(sticky) != 1 or heads != [newest[:12]]:
                crossings.append(
                    f"#{number}: {len(sticky)} sticky comments, heads {heads}, newest {newest[:12]}"
                )
        asked = [r for r in emulator.requests if r.method == "GET" and r.path.endswith("/permission")]
        print(
            f"sent {args.deliveries} in {sent_s:.1f} s, acknowledged {acknowledged}, processed {counts} "
            f"(queue drained {drained_s:.1f} s after the first), {len(asked)} permissions asked, "
            f"{args.threads} consumer threads"
        )
        print(f"pull requests whose comment is not their own newest head's: {len(crossings)}")
        for line in crossings[:20]:
            print("  " + line)
        print(f"requests that broke GitHub's REST description: {len(emulator.invalid)}")
        return 1 if crossings or emulator.invalid else 0
    finally:
        bot.stop()
        emulator.stop()


if __name__ == "__main__":
    sys.exit(main())
