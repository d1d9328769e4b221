"""`perfbot compare` on a committed H200 results file renders its kernel diff in every format."""

from __future__ import annotations

import json
from pathlib import Path

from bot.cli.main import main

AB = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "h200-verdict" / "r3" / "ab.json"


def compare(capsys, *argv) -> str:
    assert main(["compare", str(AB), *argv]) == 0
    return capsys.readouterr().out


def test_the_text_report_ends_with_the_kernels_that_changed(capsys):
    out = compare(capsys)
    assert "kernels (one profiled pass per side, not timed): 2 appeared; 1 changed calls per step" in out
    assert "appeared  at::native::vectorized_elementwise_kernel<8, at::native::FillFunctor" in out


def test_the_markdown_report_carries_the_collapsible_table(capsys):
    out = compare(capsys, "--format", "markdown")
    assert "<details><summary>Kernels (GPU kernels, one profiled pass per side, not timed)" in out
    assert "| memset / fill | 58.44 | 10,032 | **+9,973.1** |" in out


def test_the_json_has_the_diff_under_kernels(capsys):
    kernels = json.loads(compare(capsys, "--format", "json"))["kernels"]
    assert kernels["changed"] and kernels["device"] == "cuda"
    assert {k["change"] for k in kernels["kernels"]} == {"appeared", "calls"}
    assert [f["family"] for f in kernels["families"] if f["moved"]] == ["memset"]


def test_a_diff_that_cannot_be_read_is_one_line_and_exit_2(capsys, tmp_path):
    not_a_diff = tmp_path / "notes.txt"
    not_a_diff.write_text("just some notes\n")
    for argv, message in (
        ([str(tmp_path / "missing.diff")], "cannot read"),
        ([str(tmp_path)], "is a directory"),
        ([str(not_a_diff)], "not a unified diff"),
        (["-"], "name a file"),
    ):
        assert main(["compare", str(AB), "--diff", *argv]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_diff_without_launching_lines_in_the_file_changes_nothing(capsys, tmp_path):
    change = tmp_path / "change.diff"
    change.write_text("diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n")
    assert compare(capsys, "--diff", str(change)) == compare(capsys)
