"""The review's note on a config read with problems says the reader's whole line (the held runs at
its end included, however long the key that was wrong) and says the held runs once."""

from __future__ import annotations

from bot.core.config.lenient import problem_line
from bot.core.config.schema import ConfigError
from bot.core.render.comment import PullContext
from tests.core.render.test_comment import PULL, comment_body, scenario

LONG_KEY = "bench.suites.sglang-eagle3-speculative-decoding-large.draft_model_pth"


def note_of(line: str) -> str:
    body = comment_body(scenario("medium"), PullContext(PULL.html_url, PULL.head_sha, "main", line))
    [note] = [part for part in body.split("\n\n") if "**Config problem:**" in part]
    return note.replace("\\", "")  # Markdown's escapes


def test_a_long_key_s_note_keeps_the_held_runs_and_says_them_once():
    line = problem_line(
        ConfigError(
            ".github/perfbot.yml@main",
            [f"{LONG_KEY}: unknown key (did you mean 'draft_model_path'?)", "bench.timout: unknown key"],
        )
    )
    note = note_of(line)
    assert f"{LONG_KEY}: unknown key (did you mean 'draft_model_path'?)" in note
    assert "(bench.dispatch.auto, on_merge, schedule, bench.watch.bisect) are off until it is fixed." in note
    assert note.count("until it is fixed") + note.count("until the file is fixed") == 1, note
