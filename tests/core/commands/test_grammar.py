"""The `/bench` grammar: one command per comment, and only where a reader sees a command."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.commands import grammar
from bot.core.commands.grammar import (
    MAX_COMMENT,
    MAX_LINE,
    Ack,
    Approve,
    Cancel,
    Help,
    Invalid,
    Run,
    find,
    parse,
)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("/bench", Run()),
        ("/bench verify-step", Run(("verify-step",))),
        ("/bench verify-step other.suite --rounds 7", Run(("verify-step", "other.suite"), 7)),
        ("/bench --rounds=3 --max-rounds=12", Run((), 3, 12)),
        ("/bench\t--max-rounds 4 a a", Run(("a",), None, 4)),
        ("/bench help", Help()),
        ("/bench cancel", Cancel()),
        ("/bench approve", Approve()),
        ("/bench ack  known: the copy is needed for PCG ", Ack("known: the copy is needed for PCG")),
    ],
)
def test_each_command_parses(text, expected):
    assert find(text) == expected


@pytest.mark.parametrize(
    "text, says",
    [
        ("/bench --rounds 0", "from 1, not '0'"),
        ("/bench --rounds", "not '(nothing)'"),
        ("/bench --rounds 9999999999", "whole number"),
        ("/bench --rounds -3", "whole number"),
        ("/bench --warmup 2", "unknown option '--warmup'"),
        ("/bench x;rm", "'x;rm' is not a suite name"),
        ("/bench $(reboot)", "is not a suite name"),
        ("/bench `id`", "is not a suite name"),
        ("/bench help me", "takes nothing after it"),
        ("/bench ack", "needs a reason"),
        ("/bench " + " ".join(f"s{i}" for i in range(21)), "at most 20 suites"),
        ("/bench " + "a" * MAX_LINE, f"at most {MAX_LINE} characters"),
    ],
)
def test_bad_commands_say_what_is_wrong_in_one_line(text, says):
    found = find(text)
    assert isinstance(found, Invalid) and says in found.problem and "\n" not in found.problem


def test_rounds_beyond_any_cap_parse_and_are_refused_by_the_policy_not_the_grammar():
    assert find("/bench --rounds 100000") == Run((), 100000)


@pytest.mark.parametrize(
    "text",
    [
        "> /bench",
        ">> /bench verify-step",
        "```\n/bench\n```",
        "~~~\n/bench\n~~~",
        "text\n\n    /bench",
        "\t/bench",
        "`/bench`",
        "see `\n/bench` here",
        "please /bench",
        "- /bench",
        "1. /bench",
        "# /bench",
        "/bench\n===",
        "<!--\n/bench\n-->",
        "<details>\n/bench\n</details>",
        "| /bench | a |\n|---|---|",
        "/bench | a\n--- | ---",
        "/benchmark",
        "/Bench",
        "text\n     /bench",
    ],
)
def test_no_command_in_quotes_code_lists_html_or_mid_line(text):
    assert find(text) is None


def test_the_first_command_wins():
    assert find("thanks!\n/bench help\n/bench cancel") == Help()
    assert find("/bench --rounds 0\n/bench") == Invalid(
        "--rounds takes a whole number of rounds from 1, not '0'"
    )


def test_a_command_after_a_code_block_still_counts():
    assert find("```\n/bench cancel\n```\n\n/bench approve") == Approve()


def test_a_command_inside_a_code_span_that_spans_lines_is_not_taken():
    assert find("a `b\n/bench cancel` d") is None
    assert find("a `b\n/bench cancel` d\n/bench approve") is None, "after it, lines cannot be placed"
    assert find("/bench approve\na `b\n/bench cancel` d") == Approve()


def test_windows_and_old_mac_line_breaks():
    assert find("hi\r\n/bench cancel") == Cancel()
    assert find("hi\r/bench cancel") == Cancel()


def test_10000_command_lines_take_the_first_quickly():
    text = "\n".join(f"/bench s{i}" for i in range(10_000))
    started = time.perf_counter()
    assert find(text) == Run(("s0",))
    assert time.perf_counter() - started < 5


def test_a_1_mb_comment_is_read_only_to_githubs_limit():
    text = "x" * (MAX_COMMENT - 1) + "\n/bench cancel" + "y" * 1_000_000
    started = time.perf_counter()
    assert find(text) is None
    assert find("/bench cancel\n" + "y" * 1_000_000) == Cancel()
    assert time.perf_counter() - started < 5


def test_an_ack_reason_is_kept_printable_and_bounded():
    found = find("/bench ack " + "because\u202e " * 40)
    assert found == Ack(" ".join(["because"] * 40))
    assert isinstance(find("/bench ack " + "because " * 100), Invalid)


# ---------------------------------------------------------------- properties

COMMANDS = st.sampled_from(
    [
        "/bench",
        "/bench help",
        "/bench cancel",
        "/bench approve",
        "/bench ack why",
        "/bench verify-step --rounds 3",
    ]
)
PLAIN = st.text(
    st.characters(whitelist_categories=("Ll", "Lu", "Nd"), whitelist_characters=" .,"), max_size=40
).map(lambda s: s.strip() or "x")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_any_text_gives_at_most_one_command_and_never_raises(text):
    found = find(text)
    assert found is None or isinstance(found, Run | Help | Cancel | Approve | Ack | Invalid)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "/bench",
                "> ",
                "```",
                "`",
                "    ",
                "\n",
                "\n\n",
                " ",
                "x",
                "-",
                "<!--",
                "-->",
                "~~~",
                "|",
                "\\",
                "help",
                "ack",
                "\t",
                "*",
            ]
        ),
        max_size=40,
    )
)
def test_fragments_of_markdown_and_commands_never_raise(parts):
    find("".join(parts))


@settings(max_examples=200, deadline=None)
@given(
    PLAIN,
    COMMANDS,
    PLAIN,
    st.sampled_from(["quote", "fence", "tilde", "indented", "inline", "mid-line", "list", "html"]),
)
def test_a_command_hidden_in_a_quote_code_or_mid_line_is_never_found(before, command, after, hiding):
    hidden = {
        "quote": f"> {command}",
        "fence": f"```\n{command}\n```",
        "tilde": f"~~~\n{command}\n~~~",
        "indented": f"    {command}",
        "inline": f"`{command}`",
        "mid-line": f"{before} {command}",
        "list": f"- {command}",
        "html": f"<!--\n{command}\n-->",
    }[hiding]
    assert find(f"{before}\n\n{hidden}\n\n{after}") is None


@settings(max_examples=200, deadline=None)
@given(st.lists(PLAIN, max_size=5), COMMANDS, st.lists(COMMANDS, max_size=3))
def test_a_command_on_its_own_line_is_found_and_the_first_one_wins(before, command, later):
    text = "\n".join([*before, command, *later])
    assert find(text) == parse(command)


def test_approve_may_name_the_head_it_approves():
    assert find("/bench approve 0123abc") == Approve("0123abc")
    assert find("/bench approve 0123ABCDEF") == Approve("0123abcdef")
    assert isinstance(find("/bench approve main"), Invalid)
    assert isinstance(find("/bench approve 0123ab"), Invalid), "at least 7 hex digits"
    assert isinstance(find("/bench approve 0123abc 4567def"), Invalid)


def test_one_round_is_the_least_and_the_limits_of_a_line_and_of_suites_are_inclusive():
    assert find("/bench --rounds 1 --max-rounds 1") == Run((), 1, 1)
    longest = "/bench a" + " " * (grammar.MAX_LINE - len("/bench ab")) + "b"  # a line of exactly 500
    assert len(longest) == grammar.MAX_LINE and find(longest) == Run(("a", "b"))
    assert find(longest + "c") == Invalid(f"a /bench line may be at most {grammar.MAX_LINE} characters long")
    most = "/bench " + " ".join(f"s{i}" for i in range(grammar.MAX_SUITES))
    assert find(most) == Run(tuple(f"s{i}" for i in range(grammar.MAX_SUITES)))
    assert find(most + " extra") == Invalid(f"at most {grammar.MAX_SUITES} suites at a time")
    assert (grammar.MAX_LINE, grammar.MAX_SUITES) == (500, 20)


def test_a_command_that_ends_exactly_at_githubs_limit_is_read_and_one_past_it_is_not():
    assert MAX_COMMENT == 65_536
    fits = "x" * (MAX_COMMENT - len("\n/bench cancel")) + "\n/bench cancel"
    assert len(fits) == MAX_COMMENT and find(fits) == Cancel()
    assert find("x" + fits) == Run(("cance",))  # the comment's 65,537th character is never read


def test_a_code_span_after_text_on_a_later_line_hides_a_command_only_when_lines_cannot_be_placed():
    # The code span spans a line break: rendered lines no longer match the source's, and later
    # lines are not taken.
    assert find("see `a\nb` here\n/bench") is None
    # A code span on one line keeps the lines placed: the command on the next line counts.
    assert find("see `a` here\n/bench") == Run()
    assert find("<b>x</b>\n/bench cancel") == Cancel()


def test_an_unknown_option_is_quoted_clipped_to_40_characters():
    long = "--" + "o" * 60
    problem = find(f"/bench {long}").problem
    assert (
        problem.startswith("unknown option '" + "-" * 2 + "o" * 37 + "…'")
        and len(problem.split("'")[1]) == 40
    )


def test_lines_before_a_code_span_that_breaks_placement_are_still_read():
    # The span spans a line break further down, so lines after it cannot be placed; the command
    # before it still can.
    assert find("text\n/bench\n`a\nb`") == Run()
    assert find("text\n`a\nb`\n/bench") is None


@pytest.mark.parametrize(
    "text, expected",
    [
        ("/bench bisect abc1234 DEF5678", grammar.Bisect("abc1234", "def5678")),
        (
            "/bench bisect " + "a" * 40 + " " + "b" * 40 + " verify-step --metric verify_piecewise_ms",
            grammar.Bisect("a" * 40, "b" * 40, ("verify-step",), "verify_piecewise_ms"),
        ),
        (
            "/bench bisect 1234567 7654321 --metric=tok/s a b a",
            grammar.Bisect("1234567", "7654321", ("a", "b"), "tok/s"),
        ),
    ],
)
def test_bisect_parses_two_commits_suites_and_a_metric(text, expected):
    assert find(text) == expected


@pytest.mark.parametrize(
    "text, says",
    [
        ("/bench bisect", "needs a good and a bad commit"),
        ("/bench bisect abc1234", "needs a good and a bad commit"),
        ("/bench bisect main abc1234", "'main' is not a commit sha"),
        ("/bench bisect abc123 abc1234", "is not a commit sha"),
        ("/bench bisect abc1234 abc1235 --metric", "--metric takes a metric name"),
        ("/bench bisect abc1234 abc1235 --metric $(id)", "--metric takes a metric name"),
        ("/bench bisect abc1234 abc1235 --rounds 3", "unknown option '--rounds' of /bench bisect"),
        ("/bench bisect abc1234 abc1235 x;y", "'x;y' is not a suite name"),
    ],
)
def test_a_bad_bisect_says_what_is_wrong_in_one_line(text, says):
    found = find(text)
    assert isinstance(found, Invalid) and says in found.problem and "\n" not in found.problem


@given(st.lists(st.text(alphabet="abcdef0123456789-=/:.xyz metric", max_size=45), max_size=6))
def test_any_bisect_line_parses_or_is_invalid_and_what_parses_is_safe(words):
    found = parse("/bench bisect " + " ".join(words))
    assert isinstance(found, (grammar.Bisect, Invalid))
    if isinstance(found, grammar.Bisect):
        assert all(grammar._SHA_PREFIX.fullmatch(sha) for sha in (found.good, found.bad))
        assert all(grammar.SUITE_NAME.fullmatch(suite) for suite in found.suites)
        assert found.metric is None or grammar._METRIC.fullmatch(found.metric)
