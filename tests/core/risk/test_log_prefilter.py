"""A hunk with a log call in sight is turned into tokens only when, its log calls set aside as text
(`changes._without_log_calls`), its sides could still be the same code: a shortcut that must never
change a judgement. Each generated hunk is judged with it and without it (every such hunk
tokenised, as before), and the two agree."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.risk import changes
from bot.core.risk import diff as diffs
from tests.core.risk.test_changes import file_diff

LINES = st.sampled_from(
    [
        "    x = f(a, b)",
        "    y = f(a, b)",
        "    x = f(a,",
        "        b)",
        "    return x",
        "    logger.info('a %s', x)",
        "    logger.info(",
        "        'b %s %s', x, y)",
        "    self.logger.warning_once('slow path')",
        "    self . _logger . debug(x); z = 1",
        "    log.info(x)(y)",
        "    print('x')",
        "    print(x, f(y))",
        "    obj.print(y)",
        "    obj . print(y)",
        "    catalog(x)",
        "    warnings.warn('w', stacklevel=2)",
        "    MY_LOGGER.info(x)",
        "    a().logger.info(x) + 1",
        "    # logger.info(x)",
        '    """Doc with print(x)."""',
        "    raise ValueError(f'bad {x}')",
        "    if (c):",
        "    if c:",
        "        pass",
    ]
)


def judged(text: str) -> list[object]:
    return [None if h is None else h.describe() for h in changes.classify(diffs.parse(text).files[0])]


@settings(max_examples=400, deadline=None)
@given(
    removed=st.lists(LINES, max_size=5),
    added=st.lists(LINES, max_size=5),
    before=st.lists(LINES, max_size=2),
    after=st.lists(LINES, max_size=2),
)
def test_setting_log_calls_aside_as_text_never_changes_a_judgement(removed, added, before, after):
    text = file_diff("e/x.py", removed, added, ("def f(x):", *before), tuple(after) or ("    return x",))
    shortcut = judged(text)
    # Without the shortcut: a hunk with a log call in sight always goes on to the tokens.
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(changes, "_without_log_calls", lambda text: "")
        tokenised = judged(text)
    assert shortcut == tokenised


def test_log_calls_are_set_aside_as_the_tokens_see_them():
    gone = changes._without_log_calls
    assert gone("x = f()\n    self.logger.info(a, b(c))\n    y = 2") == "x = f()\n     \n    y = 2"
    assert gone("print(x); obj.print(y); obj . print(z)") == " ; obj.print(y); obj . print(z)"
    assert gone("logger.warning( (a), \n b") == " "  # the hunk ends inside the call
    assert gone("a().logger.info(x) + 1") == "a().  + 1"
    assert gone("catalog(x) MY_LOGGER.info(x)") == "catalog(x) MY_LOGGER.info(x)"
    assert gone("mylogger.info(x) warnings.warn(x)") == "   "
