"""Rendered risk reports and triage rankings, checked against golden files."""

from __future__ import annotations

import re
from pathlib import Path

from bot.core.config import schema as config
from bot.core.render import risk as render_risk
from bot.core.render.markdown import escape_md
from bot.core.risk import diff as diffs
from bot.core.risk import profiles, ruleset, triage
from bot.core.risk import scoring as risk

HOT = """\
diff --git a/python/sglang/srt/distributed/device_communicators/pynccl.py b/python/sglang/srt/distributed/device_communicators/pynccl.py
index 1111111..2222222 100644
--- a/python/sglang/srt/distributed/device_communicators/pynccl.py
+++ b/python/sglang/srt/distributed/device_communicators/pynccl.py
@@ -140,3 +140,5 @@ class PyNcclCommunicator:
     def all_reduce(self, in_tensor, op=ReduceOp.SUM, stream=None):
-        out_tensor = in_tensor
+        out_tensor = torch.empty_like(in_tensor)
+        out_tensor.copy_(in_tensor)
+        torch.cuda.synchronize()
         return out_tensor
diff --git a/docs/guide.md b/docs/guide.md
index 3333333..4444444 100644
--- a/docs/guide.md
+++ b/docs/guide.md
@@ -1 +1 @@
-old
+new
"""

HOSTILE = """\
diff --git a/x/<img src=x onerror=alert(1)>|pynccl.py b/x/<img src=x onerror=alert(1)>|pynccl.py
index 1111111..2222222 100644
--- a/x/<img src=x onerror=alert(1)>|pynccl.py
+++ b/x/<img src=x onerror=alert(1)>|pynccl.py
@@ -1 +1 @@ def `evil`|name():
-a
+b.item() # ` | [link](http://x)
"""


def report(text: str) -> risk.RiskReport:
    parsed = diffs.parse(text)
    return risk.score(parsed, ruleset.build(config.RepoConfig(), (f.path for f in parsed.files)))


def test_the_markdown_of_a_hot_change(file_regression):
    file_regression.check(render_risk.report_markdown(report(HOT)), extension=".md")


def test_the_text_of_a_hot_change(file_regression):
    file_regression.check(render_risk.report_text(report(HOT)), extension=".txt")


# The communicator stops allocating and syncing on every call: three allocations and a sync are
# removed, one allocation stays (rewritten), and nothing is added.
REMOVALS = """\
diff --git a/python/sglang/srt/distributed/device_communicators/pynccl.py b/python/sglang/srt/distributed/device_communicators/pynccl.py
index 1111111..2222222 100644
--- a/python/sglang/srt/distributed/device_communicators/pynccl.py
+++ b/python/sglang/srt/distributed/device_communicators/pynccl.py
@@ -140,8 +140,4 @@ class PyNcclCommunicator:
     def all_reduce(self, in_tensor, op=ReduceOp.SUM, stream=None):
-        out = torch.zeros_like(in_tensor)
-        scratch = torch.zeros_like(in_tensor)
-        flags = torch.zeros_like(in_tensor)
-        torch.cuda.synchronize()
-        staged = torch.empty_like(in_tensor)
+        staged = torch.empty_like(in_tensor, device=self.device)
         self.nccl.all_reduce(in_tensor, staged, op, stream)
         return staged
"""


def test_removed_syncs_and_allocations_are_possible_improvements_not_risk():
    removals = report(REMOVALS)
    assert not any(s.rule.startswith("token.") for s in removals.signals)
    improvements = {s.rule: s for s in removals.improvements}
    assert set(improvements) == {"token.allocation", "token.host-sync"}
    assert improvements["token.allocation"].count == 3 and improvements["token.allocation"].side == "old"
    assert removals.improvement > 0 and removals.to_dict()["improvement"] == removals.improvement
    assert removals.score == risk._combine(removals.signals)  # the improvements weigh nothing in it
    sentence = improvements["token.allocation"].sentence()
    assert sentence.startswith(
        "possible improvement: a new allocation or copy in a hot path: "
        "`torch.zeros_like(` removed (3 times) [token.allocation, 12 apart from the score]"
    )


def test_the_markdown_of_removals(file_regression):
    file_regression.check(render_risk.report_markdown(report(REMOVALS)), extension=".md")


def test_the_text_of_removals(file_regression):
    file_regression.check(render_risk.report_text(report(REMOVALS)), extension=".txt")


def test_the_markdown_of_a_cold_change(file_regression):
    cold = HOT[HOT.index("diff --git a/docs") :]
    file_regression.check(render_risk.report_markdown(report(cold)), extension=".md")


def test_hostile_paths_and_lines_cannot_inject_markdown_or_html():
    rendered = render_risk.report_markdown(report(HOSTILE))
    assert not re.search(r"(?<!\\)<img", rendered) and not re.search(r"(?<!\\)\]\(http", rendered)
    for line in rendered.splitlines():
        if line.startswith("| ") and not line.startswith("|---"):
            assert line.replace("\\|", "").count("|") == 5, line  # the table keeps its 4 columns


def test_escape_md_neutralises_markup():
    assert escape_md("a*b_c`d<e>[f](g)|h") == "a\\*b\\_c\\`d\\<e\\>\\[f\\]\\(g\\)\\|h"


def commit(sha: str, subject: str, text: str) -> triage.Commit:
    return triage.Commit(sha * 40, ("0" * 40,), "Author", "2026-01-01T00:00:00+00:00", subject, text)


def ranked() -> triage.Triage:
    commits = [
        commit("a", "Update docs", HOT[HOT.index("diff --git a/docs") :]),
        commit("b", "Fix the allreduce", HOT),
    ]
    return triage.rank(commits, ruleset.build(config.RepoConfig(), ["python/sglang/"]), "v1..v2")


def test_the_triage_text_lists_commits_with_reasons_and_a_stat(file_regression):
    file_regression.check(render_risk.triage_text(ranked()), extension=".txt")


def test_the_triage_markdown(file_regression):
    file_regression.check(render_risk.triage_markdown(ranked()), extension=".md")


def test_stat_lines_scale_bars_and_mark_binaries():
    files = [
        risk.FileRisk("big.py", None, "modified", False, 900, 100, 0, None, []),
        risk.FileRisk("img.png", None, "modified", True, 0, 0, 0, None, []),
        risk.FileRisk("new.py", "old.py", "renamed", False, 1, 0, 0, None, []),
    ]
    lines = render_risk.stat_lines(files)
    assert lines[0].endswith("1000 " + "+" * 27 + "---")
    assert lines[1].rstrip().endswith("| Bin")
    assert "old.py => new.py" in lines[2]
    assert lines[-1] == " 3 files changed, 901 insertions(+), 100 deletions(-)"


def documented_table(name: str) -> str:
    text = (Path(__file__).parents[3] / "docs" / "risk.md").read_text()
    start = text.index(f"<!-- rules:{name} -->\n") + len(f"<!-- rules:{name} -->\n")
    return text[start : text.index("<!-- /rules -->", start)]


def test_the_rule_tables_in_the_docs_are_the_builtin_profiles():
    assert documented_table("sglang") == render_risk.rules_markdown(list(profiles.PROFILES["sglang"]))
    assert documented_table("vllm-extra") == render_risk.rules_markdown(list(profiles.VLLM))
