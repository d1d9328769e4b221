"""Nothing a round starts outlives it: not a process that left its session, cleared its environment or
keeps forking, in a PID namespace or in the fallback; and what perfbot started besides stays."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from bot.runner import scope
from bot.runner.scope import STRATEGY_VARIABLE, ScopeError

from .processes import SCOPES, running_with, scope_available
from .test_rounds import round_of


@pytest.fixture(params=SCOPES)
def contained(request, monkeypatch):
    monkeypatch.setenv(STRATEGY_VARIABLE, request.param)
    assert scope.strategy().name == request.param
    return request.param


def wait_until_gone(argument: str, seconds: float = 2) -> list[int]:
    """The processes still running with ``argument`` after a moment (a kill is not instantaneous)."""
    deadline = time.monotonic() + seconds
    while running_with(argument) and time.monotonic() < deadline:
        time.sleep(0.02)
    return running_with(argument)


# A process of the round that leaves its session and process group (setsid), drops its environment
# (so no variable of perfbot's finds it) and is orphaned at once: the round's command exits 0 right after.
ESCAPE = "(env -i /usr/bin/setsid sleep {marker} &) ; sleep 0.2; echo 'PERFBOT_METRIC t=1 better=lower'"


def test_a_process_that_left_its_session_and_environment_dies_with_its_round(tmp_path, contained):
    result = round_of(tmp_path, ESCAPE.format(marker="301.5"))
    assert result.ok, result.error
    assert wait_until_gone("301.5") == []


def test_a_timed_out_round_takes_its_escaped_processes_with_it(tmp_path, contained):
    result = round_of(tmp_path, "(/usr/bin/setsid sleep 302.5 &); sleep 300.75", timeout=2)
    assert result.error == "cmd: timed out after 2s and was killed"
    assert wait_until_gone("302.5") == wait_until_gone("300.75") == []


def test_a_round_that_keeps_forking_escapees_is_still_ended(tmp_path, contained):
    result = round_of(tmp_path, "while :; do (/usr/bin/setsid sleep 303.5 &); done", timeout=2)
    assert not result.ok
    assert wait_until_gone("303.5") == []


def test_what_perfbot_started_besides_its_rounds_is_left_alone(tmp_path, contained):
    # A process of perfbot's own in a session of its own, started before the round, and one in
    # perfbot's session: neither is the round's.
    own = [subprocess.Popen(["sleep", "304.5"], start_new_session=True), subprocess.Popen(["sleep", "304.5"])]
    try:
        result = round_of(tmp_path, ESCAPE.format(marker="305.5"))
        assert result.ok, result.error
        assert wait_until_gone("305.5") == []
        assert all(p.poll() is None for p in own)
    finally:
        for process in own:
            process.kill()
            process.wait()


def test_exit_statuses_are_those_of_the_command(tmp_path, contained):
    assert round_of(tmp_path, "exit 3").error == "cmd: exit status 3"
    assert "killed by signal SIGTERM" in round_of(tmp_path, "kill -TERM $$").error
    assert round_of(tmp_path, "echo 'PERFBOT_METRIC t=2 better=lower'").metrics == {"t": 2}


@pytest.mark.skipif(not scope_available("pid-namespace"), reason="no PID namespace here")
def test_in_a_pid_namespace_a_round_cannot_see_or_signal_perfbot(tmp_path, monkeypatch):
    monkeypatch.setenv(STRATEGY_VARIABLE, "pid-namespace")
    seen = tmp_path / "seen"
    result = round_of(
        tmp_path,
        f"ls /proc | grep -c '^[0-9]' > {seen}; "
        f"if kill -0 {os.getpid()} 2>/dev/null || test -e /proc/{os.getpid()}; then "
        f"echo reachable >> {seen}; fi; echo 'PERFBOT_METRIC t=1 better=lower'",
    )
    assert result.ok, result.error
    # Its init, the shell, ls and grep: nothing of the machine's.
    count, *rest = seen.read_text().split()
    assert int(count) <= 4 and rest == []


def test_an_unknown_scope_is_refused(monkeypatch):
    monkeypatch.setenv(STRATEGY_VARIABLE, "container")
    with pytest.raises(
        ScopeError, match="PERFBOT_ROUND_SCOPE=container: expected one of auto, pid-namespace, processes"
    ):
        scope.strategy()


def test_the_namespace_s_init_imports_nothing_from_the_worktree(tmp_path, monkeypatch):
    if not scope_available("pid-namespace"):
        pytest.skip("no PID namespace here")
    monkeypatch.setenv(STRATEGY_VARIABLE, "pid-namespace")
    marker = tmp_path / "planted-ran"
    for module in ("signal", "sys", "posixpath"):  # what the init imports, planted in the worktree
        (tmp_path / f"{module}.py").write_text(f"open({str(marker)!r}, 'w').write('{module}')\n")
    result = round_of(tmp_path, "echo 'PERFBOT_METRIC t=1 better=lower'")
    assert result.ok, result.error
    assert not marker.exists()


def test_scopes_alive_at_once_end_one_at_a_time(tmp_path, contained):
    """Both sides' workers and the spares live side by side: ending the first started (a worker that
    died, a spare that did not start) ends its own processes, its escapee included, and none of
    the scope started after it, whose command is perfbot's child in a session of its own too (here
    with no environment left to tell it by), and whose escapee is re-parented to perfbot."""
    first, second = scope.Scope(scope.strategy()), scope.Scope(scope.strategy())
    env = dict(os.environ)
    try:
        first.popen(
            ["bash", "-c", "(env -i /usr/bin/setsid sleep 306.5 &); exec sleep 306.25"],
            tmp_path,
            env,
            subprocess.DEVNULL,
            subprocess.DEVNULL,
        )
        later = second.popen(
            ["bash", "-c", "(/usr/bin/setsid sleep 307.5 &); exec env -i sleep 307.25"],
            tmp_path,
            env,
            subprocess.DEVNULL,
            subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 5
        while not (running_with("306.5") and running_with("307.5")) and time.monotonic() < deadline:
            time.sleep(0.02)
        first.end()
        assert wait_until_gone("306.5") == wait_until_gone("306.25") == []
        assert later.poll() is None
        assert running_with("307.25") and running_with("307.5")
    finally:
        first.end()
        second.end()
    assert wait_until_gone("307.5") == wait_until_gone("307.25") == []
