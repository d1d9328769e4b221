"""What a read of the default branch's config finds wrong is kept for the dashboard (issue 36 item 2:
the pull request said so, the dashboard could not): every invalid key with its "did you mean", by
the review, a `/bench` and the hourly sweep alike; a fixed file clears it."""

from __future__ import annotations

from bot.service import hourly
from bot.service.records import Repository
from tests.service.test_bench import REPO, comment, pull_request, send
from tests.service.test_bench import github as github  # noqa: F401 (a fixture)
from tests.service.test_bench import services as services  # noqa: F401 (a fixture)
from tests.service.test_config_typo import SWITCHED_OFF_WITH_A_TYPO

CONFIG = ".github/perfbot.yml"
TWO_TYPOS = SWITCHED_OFF_WITH_A_TYPO.replace("    on_merge: never\n", "    on_merg: never\n")


def test_the_review_keeps_every_invalid_key_and_a_fixed_file_clears_them(services, github):  # noqa: F811
    github.files[(REPO, CONFIG, "main")] = TWO_TYPOS
    send(services, "pull_request", pull_request("opened"))
    [kept] = services.store.config_problems.current([REPO])
    assert kept.source == f"{CONFIG}@main"
    assert set(kept.problems) == {
        "bench.timout: unknown key (did you mean 'timeout'?)",
        "bench.dispatch.on_merg: unknown key (did you mean 'on_merge'?)",
    }
    github.files[(REPO, CONFIG, "main")] = TWO_TYPOS.replace("timout", "timeout").replace(
        "on_merg:", "on_merge:"
    )
    send(services, "pull_request", pull_request("synchronize", minute=1))
    assert services.store.config_problems.current([REPO]) == []


def test_a_bench_command_and_the_hourly_sweep_keep_them_too(services, github):  # noqa: F811
    github.files[(REPO, CONFIG, "main")] = TWO_TYPOS
    send(services, "issue_comment", comment("/bench help"))
    assert len(services.store.config_problems.current([REPO])[0].problems) == 2
    services.store.config_problems.record(REPO, f"{CONFIG}@main", [])
    services.store.installations.add(42, [Repository(1, REPO, 42)])
    hourly.sweep(services)
    assert len(services.store.config_problems.current([REPO])[0].problems) == 2
