"""Where a run's seconds go, and the lifecycle that cuts them (issue 39): the timeline in the results
file and the report; both workers started at once, their warm start counted as the warm-up; the
profiled pass in the worker; GOOD's worker kept across a bisection's runs, and a kept worker that
died or whose tree changed ending the run that needed it, with nothing measured."""

from __future__ import annotations

import io
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.adapters.git_repo import GitRepo
from bot.core.config.schema import BenchConfig
from bot.core.config.suite_kinds.command import CommandSuite
from bot.core.judge import results
from bot.runner import bench, fingerprint, profiling, report, scope, timeline
from bot.runner.integrity import Guard
from bot.runner.options import MeasureOptions
from bot.runner.progress import Progress
from bot.runner.suites import make_suite
from bot.runner.suites.base import PROFILE_DIR, Command
from bot.runner.suites.command import METRICS_FILE, CommandBench
from bot.runner.workers import Kept, Worker
from bot.runner.worktrees import Worktrees

from .processes import scope_available

ROOT = Path(__file__).resolve().parents[2]
# A worker for the fixture's repository: started, it sleeps $START_S (its warm-up), says it is
# ready, then for each request writes the round's metric from its tree's speed.txt (or, asked for
# the profiled pass, a trace) and notes who served it (an id of its own, its tree) in $PIDS; it
# dies on its $DIE_AT-th request.
SERVE_PY = f"""\
import json, os, sys, time, uuid
sys.path.insert(0, {str(ROOT)!r})
ready, pids, me = sys.argv[1], os.environ["PIDS"], uuid.uuid4().hex
time.sleep(float(os.environ.get("START_S", "0")))
with open(ready + ".part", "w") as f:
    json.dump({{"seconds": {{"start": 0.2, "build": 0.1, "run": 0.3, "capture": 0.2}}}}, f)
os.replace(ready + ".part", ready)
served = 0
for line in sys.stdin:
    if line.strip() == "stop":
        break
    request, served = json.loads(line), served + 1
    if served == int(os.environ.get("DIE_AT", "0")):
        os._exit(3)
    with open(pids, "a") as f:
        f.write(f"{{me}} {{os.path.basename(os.getcwd())}}\\n")
    if request.get("profile"):
        from tests.core.judge.profile_data import trace
        os.makedirs(os.path.dirname(request["profile"]), exist_ok=True)
        with open(request["profile"], "w") as f:
            json.dump(trace([[("gemm_a", 10.0)]] * 2), f)
        text = "done"
    else:
        value = int(open("speed.txt").read()) * 100 + served % 3
        text = json.dumps({{"step_ms": {{"value": value, "unit": "ms", "better": "lower"}}}})
    with open(request["out"] + ".part", "w") as f:
        f.write(text)
    os.replace(request["out"] + ".part", request["out"])
"""


@pytest.fixture(autouse=True)
def no_torch_probe(monkeypatch):
    monkeypatch.setattr(fingerprint, "python_stack", lambda python: {})


@pytest.fixture
def with_worker(monkeypatch, tmp_path):
    """The command suite given the worker above (its ready file, its profiled pass); ``env`` sets
    the worker's environment (START_S, DIE_AT)."""
    script = tmp_path / "serve.py"
    script.write_text(SERVE_PY)
    env = {"PIDS": str(tmp_path / "pids.txt")}

    def command(self, context):
        return Command("serve", (sys.executable, str(script), str(context.out_dir / "ready.json")), dict(env))

    monkeypatch.setattr(CommandBench, "worker_command", command)
    monkeypatch.setattr(CommandBench, "worker_ready", lambda self, context: context.out_dir / "ready.json")
    monkeypatch.setattr(
        CommandBench,
        "worker_request",
        lambda self, context: ({"out": str(context.out_dir / METRICS_FILE)}, context.out_dir / METRICS_FILE),
    )
    monkeypatch.setattr(
        CommandBench,
        "worker_profile_request",
        lambda self, context: (
            {
                "out": str(context.out_dir / "profiled"),
                "profile": str(context.out_dir / PROFILE_DIR / "t.json"),
            },
            context.out_dir / "profiled",
        ),
    )
    return env


def config(profile: bool = False) -> BenchConfig:
    # A fresh profiled pass would fail (exit 9): a profile in the file came from the worker.
    return BenchConfig(
        suites={
            "quick": CommandSuite(
                kind="command", command="bash bench.sh", profile=profile, profile_command="exit 9"
            )
        }
    )


def run(repo, base, head, out: Path, conf: BenchConfig, warmup: int = 1, **kwargs):
    opts = bench.BenchOptions(
        base=base,
        head=head,
        suites=["quick"],
        out=out,
        measure=MeasureOptions(repo=repo, rounds=3, warmup=warmup, timeout=60),
    )
    stream = io.StringIO()
    (outcome,) = bench.run(opts, conf, Progress(stream), **kwargs)
    return outcome, json.loads(outcome.path.read_text()), stream.getvalue()


def complete_run(bench_repo, tmp_path, conf: BenchConfig | None = None) -> dict:
    """A run of the fixture's repository (``conf``: the quick suite, unprofiled) that completed;
    its results file."""
    repo, base, head = bench_repo
    outcome, data, _ = run(repo, base, head, tmp_path / "results.json", conf or config())
    assert outcome.status == "complete", data["error"]
    return data


def phases(data: dict, name: str) -> list[dict]:
    return [p for p in data["timeline"]["phases"] if p["phase"] == name]


def served(env: dict, tree: str) -> list[str]:
    """The ids of the workers that served ``tree``'s requests, one per request."""
    lines = Path(env["PIDS"]).read_text().splitlines() if Path(env["PIDS"]).exists() else []
    return [who for who, where in (line.split() for line in lines) if where == tree]


def test_the_results_file_records_where_the_seconds_went_and_the_report_shows_it(bench_repo, tmp_path):
    repo, base, head = bench_repo
    outcome, data, _ = run(repo, base, head, tmp_path / "results.json", config())
    assert outcome.status == "complete"
    names = [p["phase"] for p in data["timeline"]["phases"]]
    for once in ("fingerprint", "worktrees", "report"):
        assert names.count(once) == 1, names
    assert names.count("warm-up") == 2 and names.count("round") == 6
    # The manifests: once to begin with, then checked before and sealed after each of the 8 rounds.
    checks = [(p.get("side"), p.get("detail")) for p in phases(data, "integrity")]
    assert checks.count(("base", "checked before a round")) == 4
    assert checks.count(("head", "sealed after a round")) == 4 and len(checks) == 17
    assert [(p["side"], p["detail"]) for p in phases(data, "round")] == [
        ("base", "fresh"),
        ("head", "fresh"),
        ("head", "fresh"),
        ("base", "fresh"),
        ("base", "fresh"),
        ("head", "fresh"),
    ]
    rounds = phases(data, "round")
    assert all(
        a["start"] + a["seconds"] <= b["start"] + 1e-3 for a, b in zip(rounds, rounds[1:], strict=False)
    )
    assert data["timeline"]["seconds"] >= rounds[-1]["start"] + rounds[-1]["seconds"]
    verdict, markdown = report.judge(outcome.path)
    assert verdict == "regression"
    assert "<details><summary>Where the time went:" in markdown
    assert "| round | 6 |" in markdown and "| warm-up | 2 |" in markdown
    results.load(outcome.path.read_bytes())  # the file is as valid as ever


def test_both_workers_start_at_once_and_their_warm_start_is_the_warm_up(bench_repo, tmp_path, with_worker):
    repo, base, head = bench_repo
    with_worker["START_S"] = "1"
    outcome, data, progress = run(repo, base, head, tmp_path / "results.json", config())
    assert outcome.status == "complete", data["error"]
    started = {p["side"]: p for p in phases(data, "worker start")}
    assert set(started) == {"base", "head"}
    base_start, head_start = started["base"], started["head"]
    # Each began before the other was ready: the two start-ups overlapped.
    assert head_start["start"] < base_start["start"] + base_start["seconds"]
    assert base_start["start"] < head_start["start"] + head_start["seconds"]
    assert base_start["inside"] == {"start": 0.2, "build": 0.1, "run": 0.3, "capture": 0.2}
    # The worker's warm start was each side's warm-up: no warm-up round ran.
    assert phases(data, "warm-up") == [] and "warm-up 1/1" not in progress
    assert [(w["side"], w["ok"]) for w in data["warmups"]] == [("base", True), ("head", True)]
    assert [r["process"] for r in data["rounds"]] == ["fresh", "fresh", "worker", "worker", "fresh", "fresh"]
    # Every worker round was timed after both workers were ready.
    first = min(p["start"] for p in phases(data, "round"))
    assert all(first >= p["start"] + p["seconds"] for p in started.values())


def test_a_second_warm_up_still_runs_as_a_round_in_the_worker(bench_repo, tmp_path, with_worker):
    repo, base, head = bench_repo
    outcome, data, _ = run(repo, base, head, tmp_path / "results.json", config(), warmup=2)
    assert outcome.status == "complete", data["error"]
    assert [(p["side"], p["detail"]) for p in phases(data, "warm-up")] == [
        ("base", "worker"),
        ("head", "worker"),
    ]
    assert len(data["warmups"]) == 4 and all(w["ok"] for w in data["warmups"])


def profiled_run(bench_repo, tmp_path, where: str) -> dict:
    """A profiled run that gave each side a profile, each pass run ``where``; its results file."""
    repo, base, head = bench_repo
    outcome, data, progress = run(repo, base, head, tmp_path / "results.json", config(profile=True))
    loaded = results.load(outcome.path.read_bytes())
    assert outcome.status == "complete" and loaded.profile_errors is None
    assert loaded.base.profile is not None and loaded.head.profile is not None
    assert [(p["side"], p["detail"]) for p in phases(data, "profile")] == [("base", where), ("head", where)]
    assert "profiled pass of base (" in progress and where in progress
    return data


def test_the_profiled_pass_runs_in_the_worker_after_the_timed_rounds(bench_repo, tmp_path, with_worker):
    data = profiled_run(bench_repo, tmp_path, "in the worker")
    last_round = max(p["start"] + p["seconds"] for p in phases(data, "round"))
    assert all(p["start"] >= last_round for p in phases(data, "profile"))


def test_a_side_s_trace_is_read_while_the_next_pass_runs(bench_repo, tmp_path, with_worker, monkeypatch):
    """Reading a trace takes the CPU only: base's is read beside head's pass, not before it (the
    read waits here for head's pass to begin; read first, it would have waited in vain)."""
    head_began, seen = threading.Event(), {}
    serve, read = profiling.serve_pass, profiling.read_pass

    def serving(suite, context, *args):
        if context.side == "head":
            head_began.set()
        return serve(suite, context, *args)

    def reading(suite, context, served, commit=""):
        if context.side == "base":
            seen["head's pass began first"] = head_began.wait(10)
        return read(suite, context, served, commit)

    monkeypatch.setattr(profiling, "serve_pass", serving)
    monkeypatch.setattr(profiling, "read_pass", reading)
    data = profiled_run(bench_repo, tmp_path, "in the worker")
    assert seen == {"head's pass began first": True}
    base, head = phases(data, "profile")
    assert base["start"] + base["seconds"] > head["start"]  # base's phase lasts until its trace is read


@pytest.fixture
def good_tree(bench_repo):
    repo, base, _ = bench_repo
    with Worktrees(GitRepo.open(repo)) as kept:
        yield kept.add("good", base), kept.root


def test_good_s_worker_is_kept_warm_across_runs_against_good(bench_repo, tmp_path, with_worker, good_tree):
    repo, base, head = bench_repo
    tree, root = good_tree
    kept = Kept(root)
    try:
        first, data1, _ = run(
            repo, base, head, tmp_path / "1.json", config(), base_tree=tree, kept=kept, keep=tree
        )
        assert first.status == "complete" and set(kept.held) == {tree}
        worker = kept.held[tree].worker
        assert worker.alive
        second, data2, _ = run(
            repo, base, head, tmp_path / "2.json", config(), base_tree=tree, kept=kept, keep=tree
        )
        assert second.status == "complete", data2["error"]
        assert kept.held[tree].worker is worker and worker.alive
    finally:
        kept.stop_all()
    assert not worker.alive
    started = {p["side"]: p["detail"] for p in phases(data2, "worker start")}
    assert started["base"] == "kept warm from an earlier run"
    assert [w["side"] for w in data2["warmups"]] == ["head"]  # GOOD's warmed up in the first run
    good = served(with_worker, "good")
    assert len(good) == 2 and len(set(good)) == 1  # one GOOD worker served both runs' middle rounds


def test_the_workers_end_while_the_engine_is_walked_but_the_kept_one(
    bench_repo, tmp_path, with_worker, good_tree, monkeypatch
):
    """At the end, each worker the run has done with is told to stop before the engine's import path
    is walked, so that its exit overlaps the walk; GOOD's, kept for the next run, is not told."""
    events: list[tuple[str, Worker | None]] = []
    ask, walk = Worker.ask_to_stop, Guard.check_shared
    monkeypatch.setattr(Worker, "ask_to_stop", lambda self: events.append(("stop", self)) or ask(self))
    monkeypatch.setattr(
        Guard, "check_shared", lambda self, *a: events.append(("walk", None)) or walk(self, *a)
    )
    repo, base, head = bench_repo
    tree, root = good_tree
    kept = Kept(root)
    try:
        outcome, data, _ = run(
            repo, base, head, tmp_path / "1.json", config(), base_tree=tree, kept=kept, keep=tree
        )
        assert outcome.status == "complete", data["error"]
        good = kept.held[tree].worker
        last_walk = max(i for i, (what, _) in enumerate(events) if what == "walk")
        told = [worker for what, worker in events[:last_walk] if what == "stop"]
        assert len(told) == 1 and told[0] is not good  # head's
        assert good.alive and all(worker is not good for _, worker in events)
    finally:
        kept.stop_all()


def test_the_clocks_after_the_rounds_are_asked_while_the_engine_is_walked(
    bench_repo, tmp_path, with_worker, monkeypatch
):
    """nvidia-smi takes a while on a GPU machine: the clocks after the rounds are asked beside the
    end's walk of the engine (which waits here for that; asked after it, they never came)."""
    asked, seen = threading.Event(), {}
    walk = Guard.check_shared

    def gpus():
        if seen:  # the query after the rounds (the first decides the fingerprint)
            asked.set()
        seen.setdefault("start", True)
        return []

    def walking(self, *roots):
        if not roots:  # the end's walk, after the rounds
            seen["clocks asked during the walk"] = asked.wait(10)
        return walk(self, *roots)

    monkeypatch.setattr(fingerprint, "nvidia_gpus", gpus)
    monkeypatch.setattr(Guard, "check_shared", walking)
    data = complete_run(bench_repo, tmp_path)
    assert seen == {"start": True, "clocks asked during the walk": True}
    assert "taken_at" in data["base"]["fingerprint"]["after"]


def test_a_kept_worker_that_died_between_runs_fails_the_next_run_loudly(
    bench_repo, tmp_path, with_worker, good_tree
):
    repo, base, head = bench_repo
    tree, root = good_tree
    kept = Kept(root)
    try:
        run(repo, base, head, tmp_path / "1.json", config(), base_tree=tree, kept=kept, keep=tree)
        worker = kept.held[tree].worker
        os.kill(worker.process.pid, signal.SIGKILL)
        worker.process.wait(timeout=30)
        outcome, data, progress = run(
            repo, base, head, tmp_path / "2.json", config(), base_tree=tree, kept=kept, keep=tree
        )
    finally:
        kept.stop_all()
    assert outcome.status == "failed" and outcome.lost is not None
    assert "the worker kept for good across runs died (killed by signal SIGKILL)" in data["error"], data[
        "error"
    ]
    assert "this run measures nothing" in data["error"] and data["rounds"] == []
    assert kept.held == {}


def test_a_kept_worker_that_dies_in_a_run_ends_it_with_every_round_discarded(
    bench_repo, tmp_path, with_worker, good_tree
):
    repo, base, head = bench_repo
    tree, root = good_tree
    with_worker["DIE_AT"] = "2"  # GOOD's worker serves one round in the first run, dies in the second
    kept = Kept(root)
    try:
        first, _, _ = run(
            repo, base, head, tmp_path / "1.json", config(), base_tree=tree, kept=kept, keep=tree
        )
        assert first.status == "complete" and tree in kept.held
        outcome, data, _ = run(
            repo, base, head, tmp_path / "2.json", config(), base_tree=tree, kept=kept, keep=tree
        )
    finally:
        kept.stop_all()
    assert outcome.status == "failed" and outcome.lost is not None
    assert "the worker kept across runs died (exit status 3)" in data["error"], data["error"]
    assert data["rounds"] and not any(r["ok"] for r in data["rounds"])
    assert all(r["error"].startswith("discarded: ") for r in data["rounds"])
    assert kept.held == {}


def test_a_kept_worker_whose_tree_changed_serves_nothing(bench_repo, tmp_path, with_worker, good_tree):
    repo, base, head = bench_repo
    tree, root = good_tree
    kept = Kept(root)
    try:
        run(repo, base, head, tmp_path / "1.json", config(), base_tree=tree, kept=kept, keep=tree)
        worker = kept.held[tree].worker
        (tree / "planted.py").write_text("x = 1\n")  # what the worker imported may no longer be
        outcome, data, _ = run(
            repo, base, head, tmp_path / "2.json", config(), base_tree=tree, kept=kept, keep=tree
        )
    finally:
        kept.stop_all()
    assert outcome.status == "failed" and data["rounds"] == []
    assert "good's worktree changed since its kept worker last served" in data["error"]
    assert "planted.py" in data["error"]
    assert not worker.alive and kept.held == {}


outside = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
phase = st.fixed_dictionaries(
    {},
    optional={
        "phase": st.sampled_from([*timeline.PHASES, "nap"]) | outside,
        "start": st.floats() | outside,
        "seconds": st.floats() | outside,
        "side": st.sampled_from(["base", "head", "other"]) | outside,
        "detail": st.text(max_size=300) | outside,
        "inside": st.dictionaries(st.sampled_from(list(timeline.INSIDE)), st.floats() | outside) | outside,
    },
)


@given(
    st.fixed_dictionaries({"phases": st.lists(phase | outside, max_size=6)}, optional={"seconds": outside})
    | outside
)
def test_a_timeline_from_a_results_file_is_read_or_left_out_never_a_crash(data):
    read = timeline.read(data)
    if read is None:
        return
    for p in read.phases:
        assert p.name in timeline.PHASES and p.side in (None, "base", "head")
        assert 0 <= p.seconds < 1e7 and 0 <= p.began < 1e7 and (p.detail is None or len(p.detail) <= 200)
    timeline.markdown(read)


@pytest.fixture
def with_spares(monkeypatch, with_worker, tmp_path):
    """The worker above also serves as the suite's spare (`Suite.spare_command`); ``SPARE`` set
    to a command replaces it (one that cannot start, say)."""
    script = tmp_path / "serve.py"

    def command(self, context, profiler=False):
        if "SPARE" in with_worker:
            return Command("spare", ("bash", "-c", with_worker["SPARE"]), {})
        env = dict(with_worker)
        env["START_S"] = env.pop("SPARE_START_S", env.get("START_S", "0"))
        return Command("spare", (sys.executable, str(script), str(context.out_dir / "ready.json")), env)

    monkeypatch.setattr(CommandBench, "spare_command", command)
    return with_worker


def alive_running(text: str) -> list[int]:
    """The processes whose command line holds ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and text in (entry / "cmdline").read_bytes().decode(errors="replace"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.parametrize(("rounds", "fresh"), [(1, [0]), (2, [0, 1]), (3, [0, 2]), (5, [0, 4])])
def test_the_fresh_rounds_are_the_first_and_the_one_that_completes_the_minimum(rounds, fresh):
    p = type("P", (), {"rounds": rounds})()  # what fresh_rounds reads of a Plan
    assert bench.fresh_rounds(p) == fresh


def test_each_fresh_round_runs_in_a_spare_of_its_own_started_beside_the_workers(
    bench_repo, tmp_path, with_spares
):
    repo, base, head = bench_repo
    with_spares["START_S"] = "0.5"
    outcome, data, _ = run(repo, base, head, tmp_path / "results.json", config())
    assert outcome.status == "complete", data["error"]
    assert [(p["side"], p["detail"]) for p in phases(data, "round")] == [
        ("base", "fresh, started ahead"),
        ("head", "fresh, started ahead"),
        ("head", "worker"),
        ("base", "worker"),
        ("base", "fresh, started ahead"),
        ("head", "fresh, started ahead"),
    ]
    # The results file says what the model needs: a fresh round is a process of its own.
    assert [r["process"] for r in data["rounds"]] == ["fresh", "fresh", "worker", "worker", "fresh", "fresh"]
    for side in ("base", "head"):
        who = served(with_spares, side)
        assert len(who) == 3 and len(set(who)) == 3, who  # two spares and the worker, one round each
    started = phases(data, "worker start")
    assert sorted(p["side"] for p in started) == ["base"] * 3 + ["head"] * 3
    assert sum("started ahead (no warm-up)" in p["detail"] for p in started) == 4
    # Every process had started before the first round was timed, and none outlives the run.
    first = min(p["start"] for p in phases(data, "round"))
    assert all(first >= p["start"] + p["seconds"] for p in started)
    assert alive_running(str(tmp_path / "serve.py")) == []
    verdict, _ = report.judge(outcome.path)
    assert verdict == "regression"


def test_a_spare_that_cannot_start_leaves_its_round_to_a_process_of_its_turn(
    bench_repo, tmp_path, with_spares
):
    repo, base, head = bench_repo
    with_spares["SPARE"] = "exit 3"
    outcome, data, progress = run(repo, base, head, tmp_path / "results.json", config())
    assert outcome.status == "complete", data["error"]
    assert "a spare of base did not start" in progress and "a spare of head did not start" in progress
    assert [p["detail"] for p in phases(data, "round")] == [
        "fresh",
        "fresh",
        "worker",
        "worker",
        "fresh",
        "fresh",
    ]
    assert sum(p["detail"] == "failed" for p in phases(data, "worker start")) == 4


def test_a_spare_that_died_after_starting_is_passed_over(bench_repo, tmp_path, with_spares, monkeypatch):
    repo, base, head = bench_repo
    original = bench.start_spares

    def then_kill_one(p, suite, guard, scratch, progress, spares, *gate):
        original(p, suite, guard, scratch, progress, spares, *gate)
        victim = spares.rounds["head"][0]
        victim.wait_ready(30)
        os.kill(victim.process.pid, signal.SIGKILL)
        victim.process.wait(timeout=30)

    monkeypatch.setattr(bench, "start_spares", then_kill_one)
    outcome, data, _ = run(repo, base, head, tmp_path / "results.json", config())
    assert outcome.status == "complete", data["error"]
    assert [(p["side"], p["detail"]) for p in phases(data, "round")][:2] == [
        ("base", "fresh, started ahead"),
        ("head", "fresh, started ahead"),  # the other spare
    ]
    assert [p["detail"] for p in phases(data, "round")][4:] == ["fresh, started ahead", "fresh"]
    assert all(r["ok"] for r in data["rounds"])


def test_a_worker_that_dies_as_it_starts_takes_no_other_process_with_it(
    bench_repo, tmp_path, with_spares, monkeypatch
):
    """Base's worker, the first process started, dies before it is ready, and is stopped: head's
    worker and every spare, started after it and alive beside it, still serve their rounds."""
    if not scope_available("pid-namespace"):
        pytest.skip("no PID namespace here")  # elsewhere the other side's worker stops at each turn
    monkeypatch.setenv(scope.STRATEGY_VARIABLE, "pid-namespace")
    repo, base, head = bench_repo
    serve = CommandBench.worker_command

    def base_dies(self, context):
        command = serve(self, context)
        if context.side == "base":
            return Command(command.name, command.argv, {**command.env, "START_S": "not a number"})
        return command

    monkeypatch.setattr(CommandBench, "worker_command", base_dies)
    outcome, data, progress = run(repo, base, head, tmp_path / "results.json", config())
    assert outcome.status == "complete", data["error"]
    assert (
        "the worker of base did not start (quick: the worker ended while starting (exit status 1)" in progress
    )
    assert [(p["side"], p["detail"]) for p in phases(data, "round")] == [
        ("base", "fresh, started ahead"),
        ("head", "fresh, started ahead"),
        ("head", "worker"),
        ("base", "fresh"),
        ("base", "fresh, started ahead"),
        ("head", "fresh, started ahead"),
    ]
    assert "found dead" not in progress
    assert all(r["ok"] for r in data["rounds"])


def test_a_spare_serves_one_round(bench_repo, tmp_path, with_spares):
    from bot.runner.suites.base import WORKER_START, RoundContext
    from bot.runner.workers import Worker

    repo, base, _ = bench_repo
    suite = make_suite("quick", config())
    folder = tmp_path / "spare"
    folder.mkdir()
    spare = Worker.start(suite, RoundContext(Path(repo), folder, "base", WORKER_START), spare=True)
    assert spare is not None and spare.spare and not spare.warms
    try:
        assert spare.wait_ready(30) is None
        first = RoundContext(Path(repo), tmp_path / "r1", "base", bench.RoundId("counted", 0))
        assert spare.serve(first, 30).ok
        with pytest.raises(RuntimeError, match="a spare serves one round"):
            spare.serve(RoundContext(Path(repo), tmp_path / "r2", "base", bench.RoundId("counted", 1)), 30)
    finally:
        spare.stop()
    assert not spare.alive


def test_the_profiled_pass_runs_in_the_warm_worker_and_no_profiler_spare_starts_beside_it(
    bench_repo, tmp_path, with_spares
):
    """A worker started for this run alone serves its side's profiled pass after its timed rounds
    (warm: no first capture of its own), so no process is started ahead for the pass: two fewer
    processes start beside the others."""
    data = profiled_run(bench_repo, tmp_path, "in the worker")
    started = [p["detail"] for p in phases(data, "worker start")]
    assert len(started) == 6 and not any("profiled pass" in detail for detail in started)
    last_round = max(p["start"] + p["seconds"] for p in phases(data, "round"))
    assert all(p["start"] >= last_round for p in phases(data, "profile"))
    for side in ("base", "head"):
        who = served(with_spares, side)
        # two round spares, one round each; the worker, its round and then the pass
        assert len(who) == 4 and len(set(who)) == 3 and who[1] == who[3], who


def test_a_kept_worker_is_kept_after_a_profiled_run_that_profiled_in_a_spare(
    bench_repo, tmp_path, with_spares, good_tree
):
    repo, base, head = bench_repo
    tree, root = good_tree
    kept = Kept(root)
    try:
        first, data, _ = run(
            repo, base, head, tmp_path / "1.json", config(profile=True), base_tree=tree, kept=kept, keep=tree
        )
        assert first.status == "complete", data["error"]
        assert set(kept.held) == {tree} and not kept.held[tree].worker.profiled
        # The kept side's pass in a process started for it; the other side's in its worker.
        assert [(p["side"], p["detail"]) for p in phases(data, "profile")] == [
            ("base", "in a process started ahead"),
            ("head", "in the worker"),
        ]
        started = [(p["side"], p["detail"]) for p in phases(data, "worker start")]
        assert [side for side, detail in started if "profiled pass" in detail] == ["base"]
    finally:
        kept.stop_all()


def test_the_processes_start_while_the_fingerprint_is_taken(bench_repo, tmp_path, with_worker, monkeypatch):
    """The fingerprint's probe imports torch (seconds on a GPU machine): the run waits for it only
    where the results file needs it, after the processes have been started; no round is timed
    before both are done."""
    original = bench._fingerprint

    def slow(*asked):
        time.sleep(1.5)
        return original(*asked)

    asked = []
    monkeypatch.setattr(bench, "_fingerprint", slow)
    monkeypatch.setattr(fingerprint, "nvidia_gpus", lambda: asked.append(1) or [])
    data = complete_run(bench_repo, tmp_path)
    # The GPUs are asked once for the start (the fingerprint records that answer) and once for the
    # clocks after the rounds: whether to profile is not a second query while the fingerprint runs.
    assert len(asked) == 2
    (taken,) = phases(data, "fingerprint")
    assert taken["seconds"] >= 1.5
    started = phases(data, "worker start")
    assert len(started) == 2 and all(p["start"] < taken["start"] + taken["seconds"] for p in started)
    first = min(p["start"] for p in phases(data, "round"))
    assert first >= taken["start"] + taken["seconds"]


def test_a_spare_s_start_is_when_it_said_it_was_ready_not_when_it_was_looked_at(
    bench_repo, tmp_path, with_spares
):
    """The processes are waited for one after another: a spare ready long before the worker waited
    for ahead of it is recorded with its own start, not the wait's."""
    repo, base, head = bench_repo
    with_spares["START_S"], with_spares["SPARE_START_S"] = "3", "0"
    outcome, data, _ = run(repo, base, head, tmp_path / "results.json", config())
    assert outcome.status == "complete", data["error"]
    started = phases(data, "worker start")
    workers = [p for p in started if p["detail"].startswith("started")]
    spares = [p for p in started if p["detail"].startswith("a fresh round's process")]
    assert len(workers) == 2 and len(spares) == 4
    assert all(p["seconds"] >= 3 for p in workers)
    assert all(p["seconds"] < 2 for p in spares), [p["seconds"] for p in spares]


def test_a_profiler_spare_s_set_up_is_said_in_the_report():
    """The profiled pass's spare reports how long its profiler took to set up (`profiler`): the
    report's timeline says it beside the interpreter's start."""
    data = {
        "seconds": 8.0,
        "phases": [
            {
                "phase": "worker start",
                "start": 0.7,
                "seconds": 6.3,
                "side": "base",
                "inside": {"start": 1.8, "profiler": 4.2},
            }
        ],
    }
    text = timeline.markdown(timeline.read(data))
    assert "interpreter and torch start 1.8 s, profiler set-up 4.2 s." in text


def test_a_suite_that_says_it_profiles_starts_its_processes_without_waiting_for_nvidia_smi(
    bench_repo, tmp_path, with_spares, monkeypatch
):
    """Whether to start profiler spares needs the machine's GPUs only where the suite does not say
    whether it profiles: one that says so launches its processes while nvidia-smi still answers
    (which waits here for the launch; asked first, it would have waited in vain)."""
    launching, seen = threading.Event(), {}
    launch = bench.launch_workers

    def gpus():
        seen.setdefault("launched while nvidia-smi answered", launching.wait(10))
        return []

    def launched(*args, **kwargs):
        launching.set()
        return launch(*args, **kwargs)

    monkeypatch.setattr(fingerprint, "nvidia_gpus", gpus)
    monkeypatch.setattr(bench, "launch_workers", launched)
    data = complete_run(bench_repo, tmp_path, config(profile=True))
    assert seen == {"launched while nvidia-smi answered": True}
    assert len(phases(data, "worker start")) == 6 and len(phases(data, "profile")) == 2  # 2 workers, 4 spares


def test_scipy_is_imported_aside_once_the_processes_are_started(
    bench_repo, tmp_path, with_worker, monkeypatch
):
    """The adaptive rule's SciPy is imported on a thread beside the processes' start, not before
    they are started: one interpreter lock, and the import slowed their launch."""
    import importlib

    events: list[str] = []
    launch, load = bench.launch_workers, importlib.import_module

    def launching(*args, **kwargs):
        events.append("launching")
        launched = launch(*args, **kwargs)
        events.append("launched")
        return launched

    def importing(name, *args):
        if name == "bot.runner.adaptive":
            events.append("adaptive")
        return load(name, *args)

    monkeypatch.setattr(bench, "launch_workers", launching)
    monkeypatch.setattr(importlib, "import_module", importing)
    complete_run(bench_repo, tmp_path)
    assert events[:3] == ["launching", "launched", "adaptive"]
