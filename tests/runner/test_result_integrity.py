"""The code under test cannot forge its own results (issue 17, row 5).

The head revision plants the attack a review reproduced on the runner: its benchmark starts a
process that calls ``setsid()`` (leaving the round's session and process group), looks for
perfbot's results file (in perfbot's command line and environment, and on disk), waits for perfbot
to exit and rewrites the file, head twice as fast, before the upload. It must die with its round,
the path must appear on no command line, and a results file changed after perfbot wrote it (by a
process the scope could not reach) must never be uploaded.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pytest

from tests.runner.test_action import CONFIG, Runner, engine_python
from tests.runner.test_isolation import HONEST_BENCH

from .processes import running_with

# The forger: leaves the round's session at once (double fork + setsid), then finds perfbot and its
# results files and rewrites them with head's rounds at half base's time, for 20 seconds after
# perfbot's exit (or, if it cannot see perfbot, from the start), so that the step after perfbot
# reads the forgery.
FORGER = r"""
import json, os, sys, time
from pathlib import Path
markers, search = Path(sys.argv[1]), Path(sys.argv[2])
if os.fork():
    sys.exit(0)
os.setsid()
if os.fork():
    sys.exit(0)
sys.argv.append("perfbot-forger-marker")  # for the test's search, not the attack
def parent(pid):
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
(markers / "forger-started").write_text(str(os.getpid()))
seen = []
for entry in Path("/proc").iterdir():
    try:
        seen.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
    except OSError:
        pass
(markers / "cmdlines").write_text("\n".join(seen))
perfbot, paths = None, set()
pid = int(os.environ.get("FORGER_PARENT", "0")) or os.getppid()
while pid > 1:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        break
    if b"bench" in argv and b"run" in argv:
        perfbot = pid
        if b"--out" in argv:
            paths.add(Path(argv[argv.index(b"--out") + 1].decode()))
        try:
            for item in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                if item.startswith(b"PERFBOT_BENCH_OUT="):
                    paths.add(Path(item.split(b"=", 1)[1].decode()))
        except OSError:
            pass
        break
    pid = parent(pid)
def targets():
    found = set(paths)
    for path in search.rglob("results*.json"):
        if "perfbot-worktrees" not in str(path):
            found.add(path)
    return found
def forge(path):
    try:
        data = json.loads(path.read_text())
        for round in data.get("rounds", []):
            if round.get("side") == "head" and round.get("metrics"):
                round["metrics"] = {name: value / 2 for name, value in round["metrics"].items()}
        path.write_text(json.dumps(data))
        (markers / "forger-rewrote").write_text(str(path))
    except (OSError, ValueError):
        pass
while perfbot is not None and Path(f"/proc/{perfbot}").exists():
    time.sleep(0.01)
deadline = time.monotonic() + 20
while time.monotonic() < deadline:
    for path in targets():
        forge(path)
    time.sleep(0.02)
"""


@pytest.fixture
def forging_head(git_builder, tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    (tmp_path / "action").mkdir()
    bench = HONEST_BENCH + f"FORGER_PARENT=$PPID python3 forge.py {markers} {tmp_path / 'action'}\n"
    base = git_builder.commit("base", {"bench.sh": HONEST_BENCH, "speed.txt": "10\n"})
    head = git_builder.commit("head: forges", {"speed.txt": "12\n", "bench.sh": bench, "forge.py": FORGER})
    config = tmp_path / "perfbot.yml"
    config.write_text(CONFIG)
    runner = Runner(
        tmp_path / "action",
        {
            "repository-path": str(git_builder.root),
            "base-sha": base,
            "head-sha": head,
            "config": str(config),
            "suites": "quick",
            "rounds": "5",
            "correlation-id": "forge",
            "install": "false",
            "engine-python": str(engine_python(tmp_path)),
        },
    )
    yield runner, markers
    deadline = time.monotonic() + 30  # an old perfbot's forgers run for 20 s: let none outlive the test
    while running_with("perfbot-forger-marker") and time.monotonic() < deadline:
        time.sleep(0.2)


def test_a_forging_head_dies_with_its_round_and_the_uploaded_results_are_perfbot_s(forging_head):
    runner, markers = forging_head
    steps, upload = runner.run()
    assert {name: s.returncode for name, s in steps.items()} == {
        "install": 0,
        "bench": 0,
        "report": 0,
        "Fail on the verdict": 0,
    }, steps["bench"].stderr
    assert (markers / "forger-started").exists()  # the attack ran
    time.sleep(0.5)  # a forger still running rewrites within 20 ms
    # The verdict and the upload are what base and head measured: head 20% slower.
    results = json.loads((Path(upload["path"]) / "results.json").read_text())
    assert {r["side"]: r["metrics"]["step_ms"] for r in results["rounds"]} == {"base": 10, "head": 12}
    assert runner.outputs()["verdict"] == "regression"
    # It died with its round: none is left now that perfbot is done.
    assert running_with("perfbot-forger-marker") == []
    # No command line of the machine named where perfbot writes, and the upload is what it wrote.
    written = runner.steps["bench"]["written-dir"]
    assert Path(written).name not in (markers / "cmdlines").read_text()
    assert json.loads((Path(written) / "results.json").read_text()) == results


def rewrite_after_bench(runner, change):
    def after(step):
        if step == "bench":
            change(Path(runner.steps["bench"]["written-dir"]))

    return after


def halve_head(folder: Path) -> None:
    path = folder / "results.json"
    data = json.loads(path.read_text())
    for round in data["rounds"]:
        if round["side"] == "head":
            round["metrics"] = {name: value / 2 for name, value in round["metrics"].items()}
    path.write_text(json.dumps(data, indent=2) + "\n")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            halve_head,
            "a results file is not the one perfbot wrote (its SHA-256 differs); nothing is uploaded",
        ),
        (
            lambda folder: (folder / "results.extra.json").write_text((folder / "results.json").read_text()),
            "perfbot's results folder holds other files than those perfbot recorded writing",
        ),
        (
            lambda folder: (folder / "results.json").unlink(),
            "perfbot's results folder holds other files than those perfbot recorded writing",
        ),
    ],
)
def test_results_changed_after_perfbot_wrote_them_are_never_uploaded(git_builder, tmp_path, change, message):
    """What no scope can reach (a process started through a daemon, say) changes the files between
    perfbot's exit and the upload: the action checks them against the SHA-256 perfbot recorded."""
    base = git_builder.commit("base", {"bench.sh": HONEST_BENCH, "speed.txt": "10\n"})
    head = git_builder.commit("head", {"speed.txt": "12\n"})
    config = tmp_path / "perfbot.yml"
    config.write_text(CONFIG)
    (tmp_path / "action").mkdir()
    runner = Runner(
        tmp_path / "action",
        {
            "repository-path": str(git_builder.root),
            "base-sha": base,
            "head-sha": head,
            "config": str(config),
            "suites": "quick",
            "rounds": "3",
            "correlation-id": "tamper",
            "install": "false",
            "engine-python": str(engine_python(tmp_path)),
        },
    )
    steps, upload = runner.run(after_step=rewrite_after_bench(runner, change))
    assert steps["bench"].returncode == 0
    assert steps["report"].returncode == 1
    assert message in steps["report"].stdout
    assert upload["path"] == ""  # the upload step fails: nothing to upload
    assert runner.outputs()["verdict"] == ""


def test_the_digest_perfbot_records_is_that_of_the_file_it_wrote(git_builder, tmp_path):
    base = git_builder.commit("base", {"bench.sh": HONEST_BENCH, "speed.txt": "10\n"})
    head = git_builder.commit("head", {"speed.txt": "12\n"})
    config = tmp_path / "perfbot.yml"
    config.write_text(CONFIG + "    other:\n      kind: command\n      command: bash bench.sh\n")
    (tmp_path / "action").mkdir()
    runner = Runner(
        tmp_path / "action",
        {
            "repository-path": str(git_builder.root),
            "base-sha": base,
            "head-sha": head,
            "config": str(config),
            "suites": "quick other",
            "rounds": "1",
            "correlation-id": "digest",
            "install": "false",
            "engine-python": str(engine_python(tmp_path)),
        },
    )
    steps, upload = runner.run()
    assert steps["report"].returncode == 0, steps["report"].stdout
    written = Path(runner.steps["bench"]["written-dir"])
    recorded = dict(
        reversed(line.split("  ")) for line in runner.steps["bench"]["results-sha256"].splitlines()
    )
    assert sorted(recorded) == ["results.other.json", "results.quick.json", "rounds.md"]
    assert recorded == {name: hashlib.sha256((written / name).read_bytes()).hexdigest() for name in recorded}
    assert sorted(p.name for p in Path(upload["path"]).iterdir()) == [
        "results.other.json",
        "results.quick.json",
        "summary.md",
    ]
