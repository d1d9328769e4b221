"""`perfbot compare` end to end: formats, exit codes, and one-line errors for bad files."""

from __future__ import annotations

import json

import pytest

from bot.cli.main import main
from tests.core.judge.results_data import EAGLE3, document, text

QUIET = {
    "verify_ms": (
        "ms",
        "lower",
        [583.0, 583.4, 582.9, 583.1, 583.2, 582.8],
        [583.1, 583.0, 583.2, 582.9, 583.3, 583.0],
    )
}


@pytest.fixture
def regression_file(tmp_path):
    path = tmp_path / "results.json"
    path.write_text(text(EAGLE3))
    return path


def run(capsys, *argv):
    code = main(["compare", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_text_report_names_the_regression(capsys, regression_file):
    code, out, err = run(capsys, regression_file)
    assert code == 0 and err == ""
    assert out.startswith("regression: This PR makes the EAGLE-3 cycle 52% slower")
    assert "Speculation no longer pays" in out


def test_json_follows_the_contract(capsys, regression_file):
    code, out, _ = run(capsys, regression_file, "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["verdict"] == "regression"
    assert {"verdict", "metrics", "environment_diff", "notes", "headline"} <= data.keys()
    first = data["metrics"][0]
    assert first["name"] == "verify_ms" and first["verdict"] == "regression"
    assert first["ci"][0] < first["ratio"] < first["ci"][1]
    assert data["speculation"]["stopped_paying"] is True
    assert data["speculation"]["break_even"].startswith("Speculation now costs more than it saves: 0.73×")
    [drawn] = data["charts"]  # the per-round chart of the headline metric, as the dashboard draws it
    assert drawn["metric"] == "cycle_ms" and drawn["labels"][:2] == ["1 BH", "2 HB"]
    assert drawn["base"] == EAGLE3["cycle_ms"][2] and drawn["head"] == EAGLE3["cycle_ms"][3]


def test_markdown_is_the_pr_comment(capsys, regression_file):
    code, out, _ = run(capsys, regression_file, "--format", "markdown")
    assert code == 0 and out.startswith("### 🔴 This PR makes the EAGLE-3 cycle")
    assert "| metric | base | head | change | interval the verdict used | verdict |" in out


def test_fail_on_regression_exits_1_only_when_there_is_one(capsys, regression_file, tmp_path):
    assert run(capsys, regression_file, "--fail-on", "regression")[0] == 1
    quiet = tmp_path / "quiet.json"
    quiet.write_text(text(QUIET))
    assert run(capsys, quiet, "--fail-on", "regression")[0] == 0


def test_fail_on_inconclusive_also_fails_a_run_that_could_not_decide(capsys, tmp_path):
    short = tmp_path / "short.json"
    short.write_text(text({"ttft_ms": ("ms", "lower", [30.0, 34.0], [33.0, 36.0])}))
    assert run(capsys, short, "--fail-on", "regression")[0] == 0
    assert run(capsys, short, "--fail-on", "inconclusive")[0] == 1


def test_a_benchmark_that_never_ran_fails_the_gate(capsys, tmp_path):
    empty_head = {n: (u, b, base, []) for n, (u, b, base, _) in EAGLE3.items()}
    path = tmp_path / "failed.json"
    path.write_text(text(empty_head, failed={"head": 2}))
    code, out, _ = run(capsys, path, "--fail-on", "regression")
    assert code == 1 and out.startswith("error: No verdict: 2 of 2 head rounds failed")


def test_a_larger_minimum_effect_is_honoured(capsys, regression_file):
    code, out, _ = run(capsys, regression_file, "--format", "json", "--min-effect", "60")
    data = json.loads(out)
    assert data["method"] == {
        "min_effect": 0.6,
        "alpha": 0.01,
        "looks": 1,
        "confidence": 0.95,
        "min_rounds": 3,
        "model": "random-effects on log round values, Knapp-Hartung t",
    }
    assert data["verdict"] != "regression"


def test_there_is_no_seed_to_pass_the_judgement_never_resamples(capsys, regression_file):
    code, _, err = run(capsys, regression_file, "--seed", "3")
    assert (
        code == 2
        and err.startswith("perfbot: error: unrecognized arguments: --seed 3")
        and err.count("\n") == 1
    )


def test_the_same_file_gives_the_same_report(capsys, regression_file):
    first = run(capsys, regression_file, "--format", "json")[1]
    assert run(capsys, regression_file, "--format", "json")[1] == first


def test_standard_input_is_read_with_a_dash(capsys, monkeypatch, regression_file):
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(regression_file.read_bytes())))
    assert run(capsys, "-")[0] == 0


@pytest.mark.parametrize(
    "content,expected",
    [
        ('{"schema": "perfbot.results/1", "suite": ', "not valid JSON (truncated?)"),
        ('{"schema": "perfbot.results/9"}', "unsupported schema"),
        (json.dumps(document(QUIET) | {"head": None}), "head"),
    ],
)
def test_a_bad_file_is_exit_2_with_one_line(capsys, tmp_path, content, expected):
    path = tmp_path / "bad.json"
    path.write_text(content)
    code, out, err = run(capsys, path)
    assert code == 2 and out == ""
    assert err.startswith("perfbot: error: ") and expected in err and err.count("\n") == 1


@pytest.mark.parametrize(
    "argv,expected",
    [
        (["missing.json"], "cannot read"),
        (["."], "is a directory"),
        (["{file}", "--min-effect", "abc"], "not a number"),
        (["{file}", "--alpha", "2"], "between 0 and 1"),
        (["{file}", "--fail-on", "bogus"], "invalid choice"),
    ],
)
def test_bad_arguments_are_exit_2_with_one_line(capsys, regression_file, argv, expected):
    code, _, err = run(capsys, *[a.replace("{file}", str(regression_file)) for a in argv])
    assert code == 2 and expected in err and err.count("\n") == 1


def test_an_oversized_file_is_refused_before_parsing(capsys, tmp_path):
    path = tmp_path / "huge.json"
    path.write_bytes(b" " * (2 * 2**20))
    code, _, err = run(capsys, path, "--max-mib", "1")
    assert code == 2 and "larger than" in err
