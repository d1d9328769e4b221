"""Every metric name a results file accepts can be bisected: the results contract, the formats'
names, the bisect dispatch, `/bench bisect --metric` and the action's ``metric`` input share one
rule (`bot.core.metric_names`)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from bot.core import metric_names
from bot.core.bench import contract
from bot.core.commands import grammar
from bot.core.formats.base import metric_name
from bot.core.judge import results

ROOT = Path(__file__).resolve().parents[2]
GOOD, BAD = "a" * 40, "b" * 40
HUNDRED = "m" * 60 + "@" + "x" * 20 + "+" + "y" * 18  # 100 characters
# Names as the results contract takes them: a pytest id's brackets are made `_` by the formats.
NAMES = [metric_name("test_attn[bf16+causal]", "f", "name"), "ttft_p99@bs8", HUNDRED, "tok/s", "a"]


def test_the_pytest_id_the_issue_names_becomes_a_name_with_its_plus():
    assert NAMES[0] == "test_attn_bf16+causal" and len(HUNDRED) == 100


def test_the_results_contract_uses_the_one_rule():
    assert results.METRIC_NAME == metric_names.PATTERN


@pytest.mark.parametrize("name", NAMES)
def test_a_name_the_results_accept_makes_valid_bisect_inputs(name):
    assert re.fullmatch(results.METRIC_NAME.strip("^$"), name)
    assert contract.bisect_inputs(GOOD, BAD, "suite", name, None, None, "pb-1")["metric"] == name


@pytest.mark.parametrize("name", NAMES)
def test_a_name_the_results_accept_is_taken_by_bench_bisect(name):
    found = grammar.parse(f"/bench bisect abc1234 abc1235 --metric {name}")
    assert found == grammar.Bisect("abc1234", "abc1235", (), name)


@given(st.from_regex(metric_names.PATTERN, fullmatch=True))
def test_every_name_the_results_accept_is_dispatchable(name):
    name = name.rstrip("\n")  # `$` of the pattern lets a final newline through only in Python
    assert contract.bisect_inputs(GOOD, BAD, "suite", name, None, None, "pb-1")["metric"] == name
    assert grammar.parse(f"/bench bisect abc1234 abc1235 --metric={name}") == grammar.Bisect(
        "abc1234", "abc1235", (), name
    )


@given(st.text(max_size=120))
def test_whatever_a_format_makes_of_a_benchmark_name_is_dispatchable(raw):
    try:
        name = metric_name(raw, "f", "name")
    except ValueError:
        return
    assert contract.bisect_inputs(GOOD, BAD, "suite", name, None, None, "pb-1")["metric"] == name


@pytest.mark.parametrize("name", ["-x", "a b", "a;b", "a\nb", "$(id)", "a`b`", "[a](b)", "m" * 101, "é"])
def test_what_is_no_name_is_refused_by_the_dispatch_and_the_command(name):
    with pytest.raises(ValueError, match="not a metric name"):
        contract.bisect_inputs(GOOD, BAD, "suite", name, None, None, "pb-1")
    assert not metric_names.is_metric_name(name)


def _action_pattern() -> str:
    steps = yaml.safe_load((ROOT / "action.yml").read_text())["runs"]["steps"]
    script = next(step["run"] for step in steps if step.get("id") == "bench")
    found = re.search(r"^\s*metric_name='([^']*)'$", script, re.MULTILINE)
    assert found, "the action checks its metric input against metric_name='...'"
    return found[1]


def test_the_action_checks_the_metric_input_with_the_one_rule():
    assert _action_pattern() == metric_names.optional_pattern()


@pytest.mark.parametrize(
    ("name", "accepted"),
    [(name, True) for name in [*NAMES, ""]]
    + [(name, False) for name in ["-x", "a b", "a;b", "$(touch pwned)", "m" * 101, "x'y", "é"]],
)
def test_bash_reads_the_action_s_pattern_as_python_does(name, accepted, tmp_path):
    """The pattern runs under bash's ``[[ =~ ]]`` (POSIX ERE), as the action runs it."""
    bash = shutil.which("bash")
    assert bash
    script = f"metric_name='{_action_pattern()}'; [[ \"$METRIC\" =~ $metric_name ]]"
    done = subprocess.run([bash, "-c", script], env={"METRIC": name}, cwd=tmp_path, check=False)
    assert (done.returncode == 0) is accepted
    assert (re.fullmatch(metric_names.optional_pattern().strip("^$"), name) is not None) is accepted
    assert not (tmp_path / "pwned").exists()
