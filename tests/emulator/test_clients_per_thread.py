"""GitHub answers never cross between threads: every thread gets a client of its own (PyGithub's
persistent connection answers one request at a time, so a shared client can hand one thread's
response to another). Run on the real adapter against the GitHub emulator."""

from __future__ import annotations

import threading

import pytest

from bot.adapters.github_client import PyGithubFactory, retry_policy
from bot.settings import Settings
from tests.emulator import live

THREADS, CALLS = 16, 15
PERMISSIONS = ("admin", "write", "read")


@pytest.fixture(params=["app", "token"])
def factory(request, emulator, app_key) -> PyGithubFactory:
    state = emulator.add_repo(live.REPO, live.DEFAULT_BRANCH)
    for index in range(THREADS):
        if index % 4:  # every fourth login is not a collaborator at all: "none"
            state.permissions[f"user{index}"] = PERMISSIONS[index % 3]
    if request.param == "app":
        emulator.app_id, emulator.app_public_key = live.APP_ID, app_key[1]
        emulator.tokens.add("placeholder-so-that-auth-is-enforced")
        settings = Settings(app_id=live.APP_ID, private_key=app_key[0], github_api_url=emulator.base_url)
    else:
        emulator.tokens.add(live.TOKEN)
        settings = Settings(github_token=live.TOKEN, github_api_url=emulator.base_url)
    return PyGithubFactory(settings, retry=retry_policy(total=2, backoff=0.05, secondary_wait=1))


def expected(index: int) -> str:
    return (
        "none"
        if index % 4 == 0
        else {"admin": "admin", "write": "write", "read": "read"}[PERMISSIONS[index % 3]]
    )


def test_each_thread_has_a_client_of_its_own_and_keeps_it(factory):
    seen: dict[int, tuple[object, object]] = {}

    def take(index: int) -> None:
        first, again = factory.for_installation(1), factory.for_installation(1)
        seen[index] = (first, again)

    threads = [threading.Thread(target=take, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(first is again for first, again in seen.values()), "one client per thread, kept"
    clients = [first for first, _ in seen.values()]
    assert len({id(c) for c in clients}) == 4 and len({id(c.github.requester) for c in clients}) == 4


def test_sixteen_threads_asking_permissions_at_once_each_get_their_own_answer(factory):
    start = threading.Barrier(THREADS)
    wrong: list[tuple[str, str, str]] = []

    def ask(index: int) -> None:
        login = f"user{index}"
        start.wait()
        for _ in range(CALLS):
            answer = factory.for_installation(1).permission(live.REPO, login)
            if answer != expected(index):
                wrong.append((login, expected(index), answer))

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []
